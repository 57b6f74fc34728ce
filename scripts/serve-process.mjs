// How the gateway's process is started: the Node flags and the environment that `npm start`
// (package.json), the Dockerfile's CMD and ENV, and deploy/switchboard.service each write out
// (test/deploy/serve-process.test.ts holds them to this file), that the build makes the serve
// code cache under (V8 refuses a cache made under other flags), and that the bench starts its
// gateways with. All three only bound memory, and only one that would otherwise never be given
// back (README, "Performance"; DESIGN, "Capacity model"):
//
// --max-semi-space-size=4: the young generation's two halves stop at 4 MB each instead of
//   16. Under load V8 grows them to the maximum and never shrinks them: 32 MB resident
//   to collect short-lived garbage a few MB at a time.
// --heap-growing-percent=50: after a full collection the old generation may grow to 1.5x
//   what survived before the next one, not up to 4x (V8's factor for a fast collector), so
//   a gateway holding 60 MB no longer lets garbage pile up to 240 MB between collections.
// --compact-on-every-full-gc: a full collection moves the old generation's survivors together
//   and frees the pages they leave. V8's default moves only the few emptiest pages, so after a
//   burst of new chats (most of what reached the old generation dies, the chats' state stays,
//   spread thinly) the rest stay resident: at 10,000 chats old space held 77 MB for 47 in use.
//   Full collections are rare (the old generation must grow by half first), so the extra copying
//   comes now and then, never per message: CPU per message and the p99 at 50 msgs/s did not move
//   (bench peers, alternated with and without it).
// MALLOC_ARENA_MAX=2: glibc gives each thread that allocates (V8's GC helpers, libuv's
//   pool, the SQLite checkpointer's worker) an arena of its own, up to 8 per core, each
//   keeping what it once held; two arenas hold what the gateway allocates.
// MALLOC_TRIM_THRESHOLD_ and MALLOC_MMAP_THRESHOLD_=131072: glibc's defaults (128 KB), fixed.
//   Left to itself glibc raises both after a large block is freed (the code cache's 4 MB
//   buffer, the bundle read at start), up to 32 and 64 MB, and then keeps that much freed
//   memory; fixed, a block over 128 KB is mapped on its own and unmapped when freed, and
//   free memory over 128 KB at the heap's top goes back to the system.
// glibc reads them when the process starts, so they are set by what starts node, never in .env.
export const SERVE_NODE_FLAGS = ["--max-semi-space-size=4", "--heap-growing-percent=50", "--compact-on-every-full-gc"];
export const SERVE_ENV = { MALLOC_ARENA_MAX: "2", MALLOC_TRIM_THRESHOLD_: "131072", MALLOC_MMAP_THRESHOLD_: "131072" };
