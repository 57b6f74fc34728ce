/**
 * The fakes' file endpoints, driven as the platforms document them: Slack's
 * url_private needs the bot token and files:read (else a redirect to
 * sign-in), files.info through the real WebClient; Discord's CDN checks its
 * signed query; Telegram's getFile + /file/bot<token>/<path>.
 */
import { webApi } from "@slack/bolt";
import { Api } from "grammy";
import { afterEach, describe, expect, it } from "vitest";
import { FakeDiscord } from "./discord.js";
import { FakeSlack } from "./slack.js";
import { FakeTelegram } from "./telegram.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

describe("fake file endpoints", () => {
  it("Slack: files.info (WebClient) and url_private with bearer auth; no token or no files:read redirects to sign-in", async () => {
    const sl = new FakeSlack();
    await sl.start();
    closers.push(() => sl.close());
    const f = sl.files.add({ name: "a b.png", mimetype: "image/png", data: Buffer.from("PNGDATA") });
    const info = await new webApi.WebClient(sl.botToken, { slackApiUrl: sl.apiUrl }).files.info({ file: String(f.id) });
    expect(info.file?.url_private).toBe(f.url_private);
    const get = (auth?: string) => fetch(String(f.url_private_download), { redirect: "manual", headers: auth ? { authorization: auth } : {} });
    const ok = await get(`Bearer ${sl.botToken}`);
    expect([ok.status, ok.headers.get("content-type"), await ok.text()]).toEqual([200, "image/png", "PNGDATA"]);
    const anon = await get();
    expect([anon.status, anon.headers.get("location")]).toEqual([302, expect.stringMatching(/^https:\/\/fake-workspace\.slack\.com\/\?redir=/)]);
    sl.scopes = sl.scopes.filter((s) => s !== "files:read");
    expect((await get(`Bearer ${sl.botToken}`)).status).toBe(302);
    expect(sl.files.downloads.map((d) => d.status)).toEqual([200, 302, 302]);
    await expect(new webApi.WebClient(sl.botToken, { slackApiUrl: sl.apiUrl }).files.info({ file: "FNOPE" })).rejects.toThrow(/file_not_found/);
  });

  it("Discord: a signed attachment URL serves its bytes; a changed signature or file is 404", async () => {
    const dc = new FakeDiscord();
    await dc.start();
    closers.push(() => dc.close());
    const url = dc.cdn.add("1", "2", "x.png", Buffer.from("IMG"), "image/png");
    const ok = await fetch(url);
    expect([ok.status, await ok.text()]).toEqual([200, "IMG"]);
    expect((await fetch(url.replace(/hm=[0-9a-f]+/, "hm=beef"))).status).toBe(404);
    expect((await fetch(url.replace("x.png", "y.png"))).status).toBe(404);
    expect(await (await fetch(url.replace(/hm=[0-9a-f]+/, "hm=beef"))).text()).toBe("This content is no longer available.");
  });

  it("Telegram: getFile gives the path served under the token; a wrong token is 404", async () => {
    const tg = new FakeTelegram();
    await tg.start();
    closers.push(() => tg.close());
    const alice = tg.user("Alice");
    const u = tg.photo({ chat: tg.privateChat(alice), from: alice, data: Buffer.from("JPEGDATA") });
    const best = u.message!.photo!.at(-1)!;
    const file = await new Api(tg.token, { apiRoot: tg.apiRoot }).getFile(best.file_id);
    const ok = await fetch(`${tg.apiRoot}/file/bot${tg.token}/${file.file_path}`);
    expect([ok.status, await ok.text(), file.file_size]).toEqual([200, "JPEGDATA", 8]);
    expect((await fetch(`${tg.apiRoot}/file/bot1:wrong/${file.file_path}`)).status).toBe(404);
    expect(tg.fileDownloads.map((d) => d.status)).toEqual([200, 404]);
  });
});
