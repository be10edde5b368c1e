/**
 * Which hosts and addresses an outbound fetch may reach: names that never lead to the public Internet, and IP
 * addresses outside the public unicast ranges, each with the reason it is refused. Shared by the OAuth client
 * metadata policy (src/oauth/outbound-policy.ts) and document URLs (src/core/documents/fetch-url.ts).
 */

/** Names that never lead to the public Internet (RFC 6761, RFC 6762, RFC 8375, ICANN's .internal). */
export const SPECIAL_USE_SUFFIXES = [
  "localhost",
  "local",
  "internal",
  "home.arpa",
  "lan",
  "intranet",
  "corp",
  "private",
];

/** Why a host name is not a public DNS name (a special-use suffix or a single label), or null. */
export function specialUseName(host: string): string | null {
  if (!host.includes(".")) return "a single-label host is not fetched";
  if (SPECIAL_USE_SUFFIXES.some((suffix) => host === suffix || host.endsWith(`.${suffix}`)))
    return `a host under .${host.split(".").pop()} is not fetched`;
  return null;
}

/** IPv4 ranges that are not public unicast, with what they are (RFC 6890's special-purpose registry). */
const IPV4_RANGES: [string, number, string][] = [
  ["0.0.0.0", 8, "an unspecified address (0.0.0.0/8)"],
  ["10.0.0.0", 8, "a private address (10.0.0.0/8)"],
  ["100.64.0.0", 10, "a CGNAT address (100.64.0.0/10)"],
  ["127.0.0.0", 8, "a loopback address (127.0.0.0/8)"],
  ["169.254.0.0", 16, "a link-local address (169.254.0.0/16)"],
  ["172.16.0.0", 12, "a private address (172.16.0.0/12)"],
  ["192.0.0.0", 24, "an IETF protocol address (192.0.0.0/24)"],
  ["192.0.2.0", 24, "a documentation address (192.0.2.0/24)"],
  ["192.168.0.0", 16, "a private address (192.168.0.0/16)"],
  ["198.18.0.0", 15, "a benchmarking address (198.18.0.0/15)"],
  ["198.51.100.0", 24, "a documentation address (198.51.100.0/24)"],
  ["203.0.113.0", 24, "a documentation address (203.0.113.0/24)"],
  ["224.0.0.0", 4, "a multicast address (224.0.0.0/4)"],
  ["240.0.0.0", 4, "a reserved address (240.0.0.0/4)"],
];

/** Dotted IPv4 to a 32-bit number, or null when it is not four decimal octets. */
export function ipv4Number(address: string): number | null {
  const parts = address.split(".");
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) return null;
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
}

/** Why an IPv4 address is not public, or null when it is. */
export function ipv4Refusal(address: string): string | null {
  const n = ipv4Number(address);
  if (n === null) return "not an IPv4 address";
  for (const [base, bits, reason] of IPV4_RANGES) {
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    if ((n & mask) >>> 0 === (ipv4Number(base)! & mask) >>> 0) return reason;
  }
  return null;
}

/** An IPv6 address as its eight 16-bit groups (an embedded dotted IPv4 tail read as two), or null. */
export function ipv6Groups(address: string): number[] | null {
  let text = address.replace(/^\[|\]$/g, "").toLowerCase();
  if (text.includes("%")) return null; // zone ids are never fetched
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (tail) {
    const v4 = ipv4Number(tail[1]!);
    if (v4 === null) return null;
    text = `${text.slice(0, -tail[1]!.length)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const parse = (s: string) => (s ? s.split(":") : []);
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? head.length !== 8 : missing < 1) return null;
  const groups = [...head, ...Array(halves.length === 2 ? missing : 0).fill("0"), ...rest];
  if (groups.some((g) => !/^[0-9a-f]{1,4}$/.test(g))) return null;
  return groups.map((g) => Number.parseInt(g, 16));
}

/** Why an IPv6 address is not public, or null when it is. */
export function ipv6Refusal(address: string): string | null {
  const g = ipv6Groups(address);
  if (!g) return "not an IPv6 address";
  const first = g[0]!;
  if (g.every((x) => x === 0)) return "an unspecified address (::)";
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return "a loopback address (::1)";
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return "an IPv4-mapped IPv6 address (::ffff:0:0/96)";
  if (g.slice(0, 6).every((x) => x === 0)) return "an IPv4-compatible IPv6 address (::/96)";
  if (first === 0x64 && g[1] === 0xff9b) return "a NAT64 address (64:ff9b::/96)";
  if ((first & 0xfe00) === 0xfc00) return "a unique-local address (fc00::/7)";
  if ((first & 0xffc0) === 0xfe80) return "a link-local address (fe80::/10)";
  if ((first & 0xffc0) === 0xfec0) return "a site-local address (fec0::/10)";
  if ((first & 0xff00) === 0xff00) return "a multicast address (ff00::/8)";
  if (first === 0x2001 && g[1] === 0x0db8) return "a documentation address (2001:db8::/32)";
  if ((first & 0xe000) !== 0x2000) return "an address outside global unicast (2000::/3)";
  return null;
}

/** Why an address (IPv4 or IPv6) is not public, or null. */
export function addressRefusal(address: string): string | null {
  return address.includes(":") ? ipv6Refusal(address) : ipv4Refusal(address);
}
