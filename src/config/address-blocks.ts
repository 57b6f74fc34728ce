import { isIP } from "node:net";
import { z } from "zod";

/** The loopback blocks, as the word `loopback` in a list of addresses stands for them. */
export const LOOPBACK_BLOCKS: readonly string[] = ["127.0.0.0/8", "::1/128"];

/**
 * A comma-separated list of addresses and CIDR blocks (`10.0.0.5`, `10.0.0.0/8`, `fd00::/8`), where
 * `loopback` stands for 127.0.0.0/8 and ::1, and `none` (alone) for no address at all; parsed into a
 * list of `address` and `address/bits` entries. Empty: `fallback`.
 */
export const addressBlocks = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((v, ctx) => {
      const items = (v.trim() || fallback)
        .split(",")
        .map((s) => s.trim().toLowerCase())
        .filter(Boolean);
      if (items.length === 1 && items[0] === "none") return [] as string[];
      const out: string[] = [];
      for (const item of items) {
        if (item === "loopback") {
          out.push(...LOOPBACK_BLOCKS);
          continue;
        }
        const [addr = "", bits, extra] = item.split("/");
        const family = isIP(addr);
        const max = family === 6 ? 128 : 32;
        if (!family || extra !== undefined || (bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= max))) {
          ctx.addIssue({
            code: "custom",
            message: `must be addresses or CIDR blocks separated by commas (10.0.0.5, 10.0.0.0/8, fd00::/8), "loopback", or "none" (got "${item}")`,
          });
          return z.NEVER;
        }
        out.push(item);
      }
      return out;
    });
