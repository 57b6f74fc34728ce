// Lines of SDK modules the build rewrites (scripts/build.mjs), each because a module evaluates at
// load what a Node gateway never uses, and so every start paid for it. Each edit names the exact
// text it replaces: an SDK whose file reads otherwise fails the build, rather than silently
// loading it again. See "What the bundle patches" in docs/DESIGN.md.

/** A getter on `exports` that requires `spec` on first use (`pick` the export from the module). */
const lazyExport = (name, spec, pick) =>
  `Object.defineProperty(exports, ${JSON.stringify(name)}, { enumerable: true, configurable: true, get: () => ${pick(`require(${JSON.stringify(spec)})`)} });\n`;

export const SDK_PATCHES = [
  {
    // Bolt's index requires its receivers at load: ExpressReceiver (Express, body-parser, mime-db),
    // HTTPReceiver and HTTPModuleFunctions (raw-body, http-errors, depd, iconv-lite). The Slack
    // adapter uses its own receiver and Socket Mode, never these: each export requires on first use.
    file: /[\\/]@slack[\\/]bolt[\\/]dist[\\/]index\.js$/,
    edits: [
      [
        'const ExpressReceiver_1 = __importDefault(require("./receivers/ExpressReceiver"));\nexports.ExpressReceiver = ExpressReceiver_1.default;\n',
        lazyExport("ExpressReceiver", "./receivers/ExpressReceiver", (r) => `__importDefault(${r}).default`),
      ],
      [
        'const HTTPReceiver_1 = __importDefault(require("./receivers/HTTPReceiver"));\nexports.HTTPReceiver = HTTPReceiver_1.default;\n',
        lazyExport("HTTPReceiver", "./receivers/HTTPReceiver", (r) => `__importDefault(${r}).default`),
      ],
      [
        'exports.HTTPModuleFunctions = __importStar(require("./receivers/HTTPModuleFunctions"));\nvar HTTPModuleFunctions_1 = require("./receivers/HTTPModuleFunctions");\n',
        `${lazyExport("HTTPModuleFunctions", "./receivers/HTTPModuleFunctions", (r) => `__importStar(${r})`)}var HTTPModuleFunctions_1 = { get defaultBodyLimit() { return require("./receivers/HTTPModuleFunctions").defaultBodyLimit; }, get isRawBodyError() { return require("./receivers/HTTPModuleFunctions").isRawBodyError; } };\n`,
      ],
      [
        // Socket Mode's receiver requires @slack/socket-mode and with it undici 7 (about 5 ms of a
        // start): only a start with SLACK_APP_TOKEN uses it (adapters/slack/socket.ts, imported then).
        'const SocketModeReceiver_1 = __importDefault(require("./receivers/SocketModeReceiver"));\nexports.SocketModeReceiver = SocketModeReceiver_1.default;\n',
        lazyExport("SocketModeReceiver", "./receivers/SocketModeReceiver", (r) => `__importDefault(${r}).default`),
      ],
      [
        'var HTTPResponseAck_1 = require("./receivers/HTTPResponseAck");\n',
        'var HTTPResponseAck_1 = { get HTTPResponseAck() { return require("./receivers/HTTPResponseAck").HTTPResponseAck; } };\n',
      ],
    ],
  },
  {
    // Bolt's App requires HTTPReceiver for the default receiver, made only when no other is given,
    // and SocketModeReceiver, looked at only with socketMode: true.
    file: /[\\/]@slack[\\/]bolt[\\/]dist[\\/]App\.js$/,
    edits: [
      [
        'const SocketModeReceiver_1 = __importDefault(require("./receivers/SocketModeReceiver"));\n',
        'const SocketModeReceiver_1 = { get default() { return __importDefault(require("./receivers/SocketModeReceiver")).default; } };\n',
      ],
      [
        'const HTTPReceiver_1 = __importDefault(require("./receivers/HTTPReceiver"));\n',
        'const HTTPReceiver_1 = { get default() { return __importDefault(require("./receivers/HTTPReceiver")).default; } };\n',
      ],
    ],
  },
  {
    // node-fetch 2 (grammY's HTTP client) requires whatwg-url at load, and with it tr46's 0.9 MB
    // mapping table and Node's deprecated punycode, for a URL class it takes only where Node has
    // none (`Url.URL || whatwgUrl.URL`): on Node it is never used, so it is required on first use.
    file: /[\\/]node-fetch[\\/]lib[\\/]index\.js$/,
    edits: [
      ["var whatwgUrl = _interopDefault(require('whatwg-url'));\n", "var whatwgUrl = { get URL() { return _interopDefault(require('whatwg-url')).URL; } };\n"],
    ],
  },
  {
    // @discordjs/rest requires undici 6 at load (about 20 ms of a start: its whole HTTP client, a
    // second copy beside Node's own) for its default request strategy and a FormData fallback. The
    // Discord adapter gives REST Node's fetch instead (adapters/discord/client.ts), and Node 20 has
    // a global FormData, so on Node neither is ever used: each is required on first use.
    file: /[\\/]@discordjs[\\/]rest[\\/]dist[\\/]index\.js$/,
    edits: [
      ['var import_undici2 = require("undici");\n', 'var import_undici2 = { get FormData() { return require("undici").FormData; } };\n'],
      [
        'var import_undici = require("undici");\n',
        'var import_undici = { get request() { return require("undici").request; }, get Headers() { return require("undici").Headers; } };\n',
      ],
    ],
  },
  {
    // discord.js requires undici 6 at load for fetch in two helpers the adapter never calls
    // (fetchRecommendedShardCount, and resolving a file given as a URL): required on first use.
    file: /[\\/]discord\.js[\\/]src[\\/]util[\\/](?:Util|DataResolver)\.js$/,
    edits: [["const { fetch } = require('undici');\n", "const fetch = (...args) => require('undici').fetch(...args);\n"]],
  },
  {
    // @vladfrangu/async_event_emitter (under discord.js's REST and gateway clients) carries its own
    // copy of Node's util.inspect, for the browser (node-inspect-extracted, about 1,000 lines), and
    // evaluates it at load; it only formats an unhandled 'error' event. On Node it is util.inspect.
    file: /[\\/]@vladfrangu[\\/]async_event_emitter[\\/]dist[\\/]index\.cjs$/,
    edits: [["var import_inspect = __toESM(require_inspect(), 1);\n", 'var import_inspect = { default: require("node:util") };\n']],
  },
];

/** The file at `path` with its patch's edits applied; throws naming the text that is no longer there. */
export function patched(path, text, patch) {
  for (const [eager, lazy] of patch.edits) {
    if (!text.includes(eager))
      throw new Error(`build: ${path} no longer reads ${JSON.stringify(eager.slice(0, 80))} as scripts/build-patches.mjs expects: update the build`);
    text = text.replace(eager, lazy);
  }
  return text;
}
