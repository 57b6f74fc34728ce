import { slackDriver } from "./slack-driver.js";
import { conformance } from "./suite.js";

// Slack over HTTP (Events API, signed). Socket Mode runs in slack-socket.test.ts, so the two share the workers.
conformance(() => slackDriver("http"));
