import { BlockList, isIP, type Socket } from "node:net";

/**
 * Open connections per client address (HTTP_MAX_CONNECTIONS_PER_ADDRESS),
 * across the server's listeners, so one address cannot take every slot of
 * HTTP_MAX_CONNECTIONS and lock the webhooks and the operator out. An IPv6
 * client is counted by its /64 (one host is given a whole /64 to pick from);
 * an IPv4-mapped address as the IPv4 address it is. The addresses of
 * HTTP_MAX_CONNECTIONS_PER_ADDRESS_EXEMPT (loopback by default: the reverse
 * proxy of the documented deployments, which every client shares) are not
 * counted; a cap of 0 counts nobody.
 */
export class AddressCap {
  readonly #max: number;
  readonly #exempt = new BlockList();
  readonly #open = new Map<string, number>();

  /** `exempt`: addresses and CIDR blocks (`127.0.0.0/8`, `::1/128`, `10.1.2.3`), validated by the configuration. */
  constructor(max: number, exempt: readonly string[]) {
    this.#max = max;
    for (const e of exempt) {
      const [addr = "", bits] = e.split("/");
      const type = isIP(addr) === 6 ? "ipv6" : "ipv4";
      if (bits === undefined) this.#exempt.addAddress(addr, type);
      else this.#exempt.addSubnet(addr, Number(bits), type);
    }
  }

  /**
   * Counts a new connection against its address, or answers false when that address is at the cap
   * (the connection is then not counted: the caller closes it). A counted one is let go on its close.
   */
  admit(socket: Socket): boolean {
    const key = this.#max > 0 ? this.#keyOf(socket.remoteAddress) : undefined;
    if (key === undefined) return true;
    const open = this.#open.get(key) ?? 0;
    if (open >= this.#max) return false;
    this.#open.set(key, open + 1);
    socket.once("close", () => {
      const n = (this.#open.get(key) ?? 1) - 1;
      if (n > 0) this.#open.set(key, n);
      else this.#open.delete(key);
    });
    return true;
  }

  get max(): number {
    return this.#max;
  }

  /** Addresses (IPv4, IPv6 /64s) with a connection open now. */
  get addresses(): number {
    return this.#open.size;
  }

  /** The address a connection counts under, or undefined when it is not counted (exempt, or no address known). */
  #keyOf(remote: string | undefined): string | undefined {
    const a = clientAddress(remote);
    return a && !this.#exempt.check(a.address, a.family) ? keyOf(a) : undefined;
  }
}

interface ClientAddress {
  address: string;
  family: "ipv4" | "ipv6";
}

/** A socket's remote address as the cap reads it: its zone id dropped, an IPv4-mapped IPv6 address as the IPv4 address it is. */
function clientAddress(remote: string | undefined): ClientAddress | undefined {
  if (!remote) return undefined;
  const plain = remote.split("%")[0]!;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(plain)?.[1];
  if (mapped) return { address: mapped, family: "ipv4" };
  const family = isIP(plain);
  return family === 4 ? { address: plain, family: "ipv4" } : family === 6 ? { address: plain, family: "ipv6" } : undefined;
}

/** The IPv4 address itself, or the /64 of an IPv6 one (`2001:db8:0:1::/64`). */
const keyOf = (a: ClientAddress): string => (a.family === "ipv4" ? a.address : `${first64(a.address)}::/64`);

/** What a client address is counted under: the IPv4 address itself, or the /64 of an IPv6 one. */
export function addressKey(remote: string | undefined): string | undefined {
  const a = clientAddress(remote);
  return a && keyOf(a);
}

/** The first four groups of an IPv6 address, each in its shortest hex form. */
function first64(addr: string): string {
  const [head = "", tail] = addr.split("::");
  const groups = (s: string) => (s ? s.split(":").flatMap((g) => (g.includes(".") ? ["0", "0"] : [g])) : []);
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  const all = [...h, ...Array<string>(Math.max(0, 8 - h.length - t.length)).fill("0"), ...t];
  return all
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(":");
}
