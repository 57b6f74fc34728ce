import { slackDriver } from "./slack-driver.js";
import { conformance } from "./suite.js";

// Slack over Socket Mode. HTTP runs in slack-http.test.ts, so the two share the workers.
conformance(() => slackDriver("socket"));
