/** The HTTP edge's bounds (HTTP_MAX_CONNECTIONS and per address, HTTP_MAX_BUFFERED_MB, the timeouts, the default body limit). */
export interface HttpLimits {
  /** Open connections per listener; more are closed at once. */
  maxConnections: number;
  /** Open connections per client address (an IPv6 client's /64) across listeners; more are closed at once. 0: no cap. */
  maxConnectionsPerAddress: number;
  /** Addresses and CIDR blocks the per-address cap does not count (a reverse proxy's: every client shares it). */
  uncappedAddresses: readonly string[];
  /** Request-body bytes held in memory across all connections. */
  maxBufferedBytes: number;
  /** Time to receive a request's headers. */
  headersTimeoutMs: number;
  /** Time to receive a whole request, body included. */
  requestTimeoutMs: number;
  /** Body limit of a route that declares none. */
  defaultMaxBodyBytes: number;
}

export const DEFAULT_LIMITS: HttpLimits = {
  maxConnections: 2048,
  maxConnectionsPerAddress: 256,
  uncappedAddresses: ["127.0.0.0/8", "::1/128"],
  maxBufferedBytes: 16 * 1024 * 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  defaultMaxBodyBytes: 1024 * 1024,
};
