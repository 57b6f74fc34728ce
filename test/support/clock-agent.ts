import { createAgentFactory, type TurnOverrides } from "../../src/agent/factory.js";
import { echoAgent, latestUserText } from "../../src/agent/echo.js";
import { FakeOpenAi, toolUsingModel } from "../fakes/openai.js";

/**
 * An agent that echoes, except for a message holding `trigger`: that one goes
 * to a fake OpenAI model which calls current_time, so the tool call, its
 * approval card and the answer all pass through the real path. Give the app
 * `agentFactory` (as never: the factory's type is the app's own) and close
 * `model` after the app stops.
 */
export async function clockAgent(trigger: string, name: string, args = '{"timezone":"UTC"}'): Promise<{ model: FakeOpenAi; agentFactory: unknown }> {
  const model = await FakeOpenAi.start();
  model.responder = toolUsingModel({ trigger, tool: "current_time", args });
  const withModel = createAgentFactory({ baseUrl: model.baseUrl, model: "fake-model" });
  const agentFactory = (metadata: Record<string, unknown>, ctx: TurnOverrides) => {
    const tooled = withModel(metadata, { ...(ctx.tools && { tools: ctx.tools }), ...(ctx.approval && { approval: ctx.approval }) });
    const echo = echoAgent();
    return { name, run: (req: Parameters<typeof echo.run>[0]) => (latestUserText(req.messages).includes(trigger) ? tooled.run(req) : echo.run(req)) };
  };
  return { model, agentFactory };
}
