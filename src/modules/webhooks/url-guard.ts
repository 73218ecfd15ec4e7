// Owns the rule that webhooks never reach into our own network (SSRF): a URL must be http(s) and
// every address its host resolves to must be public, checked when the URL is saved and again on
// each connection (a DNS answer can change after the check: rebinding). An IPv6 address that
// carries an IPv4 one (mapped, translated, NAT64, 6to4) is judged by the IPv4 address it carries,
// in whatever form it is written.
import { type LookupAddress, lookup } from 'node:dns';
import { BlockList, isIP } from 'node:net';

const blockedV4 = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network", includes the unspecified address
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, includes cloud metadata endpoints
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved and broadcast
] as const) {
  blockedV4.addSubnet(net, prefix, 'ipv4');
}

/**
 * IPv6 ranges refused outright. Those that carry an IPv4 address a public host may have (mapped,
 * translated, NAT64's well-known prefix, 6to4) are judged by that address instead (embeddedV4).
 */
const blockedV6 = new BlockList();
for (const [net, prefix] of [
  ['::', 96], // unspecified, loopback and the old IPv4-compatible form
  ['64:ff9b:1::', 48], // local-use NAT64 (RFC 8215): a translator of this network
  ['100::', 64], // discard-only
  ['2001::', 32], // Teredo: tunnels to an IPv4 address
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  blockedV6.addSubnet(net, prefix, 'ipv6');
}

/** The eight 16-bit groups of an IPv6 address in any written form (a zone id ignored), or null. */
function groupsOf(address: string): number[] | null {
  let text = address.replace(/%.*$/, '');
  const tail: number[] = [];
  // A dotted IPv4 ending (::ffff:10.0.0.1, 64:ff9b::10.0.0.1) is the last two groups.
  const colon = text.lastIndexOf(':');
  const last = text.slice(colon + 1);
  if (last.includes('.')) {
    if (isIP(last) !== 4) return null;
    const [a, b, c, d] = last.split('.').map(Number) as [number, number, number, number];
    tail.push((a << 8) | b, (c << 8) | d);
    text = text.slice(0, colon + 1);
    // The colon before it ends a group ("…:ffff:"), unless it is half of "::".
    if (!text.endsWith('::')) text = text.slice(0, -1);
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const parse = (part: string) => (part === '' ? [] : part.split(':'));
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  if (![...head, ...rest].every((g) => /^[0-9a-f]{1,4}$/i.test(g))) return null;
  const missing = 8 - tail.length - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const hex = (g: string) => Number.parseInt(g, 16);
  return [...head.map(hex), ...new Array<number>(missing).fill(0), ...rest.map(hex), ...tail];
}

const v4Of = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;

/**
 * The IPv4 address an IPv6 address stands for, or null: IPv4-mapped (::ffff:0:0/96),
 * IPv4-translated (::ffff:0:0:0/96), NAT64 through the well-known prefix (64:ff9b::/96) and 6to4
 * (2002::/16, the address in its second and third groups). Connecting to one reaches that IPv4
 * address (through a translator, a relay or the host's own stack), so it is judged as that address.
 */
function embeddedV4(g: number[]): string | null {
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return v4Of(g[6]!, g[7]!);
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return v4Of(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return v4Of(g[6]!, g[7]!);
  if (g[0] === 0x2002) return v4Of(g[1]!, g[2]!);
  return null;
}

/** True for an address a webhook may be sent to. */
export function isPublicAddress(address: string): boolean {
  if (isIP(address) === 4) return !blockedV4.check(address, 'ipv4');
  const groups = isIP(address.replace(/%.*$/, '')) === 6 ? groupsOf(address) : null;
  if (groups === null) return false;
  const v4 = embeddedV4(groups);
  if (v4 !== null) return !blockedV4.check(v4, 'ipv4');
  const canonical = groups.map((x) => x.toString(16)).join(':');
  return !blockedV6.check(canonical, 'ipv6');
}

/** The addresses a host name resolves to. */
export type ResolveHost = (hostname: string) => Promise<string[]>;

/** Every address of a host, as the system resolver (and so `http.request`) sees it. */
export const resolveHost: ResolveHost = (hostname) =>
  new Promise((resolve, reject) => {
    lookup(hostname, { all: true, verbatim: true }, (err, addresses) =>
      err ? reject(err) : resolve(addresses.map((a) => a.address)),
    );
  });

const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, '');

/**
 * Why `raw` cannot be a webhook URL, or null when it can. With `allowPrivate` only the form is
 * checked (no DNS), so tests and trusted networks can use local receivers.
 */
export async function urlProblem(
  raw: string,
  allowPrivate: boolean,
  resolve: ResolveHost = resolveHost,
): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute http or https URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must use http or https';
  if (url.username !== '' || url.password !== '') return 'must not contain credentials; verify the signature instead';
  if (allowPrivate) return null;
  const host = hostOf(url);
  let addresses: string[];
  if (isIP(host) !== 0) {
    addresses = [host];
  } else {
    try {
      addresses = await resolve(host);
    } catch {
      return `host ${host} does not resolve`;
    }
  }
  const bad = addresses.find((a) => !isPublicAddress(a));
  return bad === undefined
    ? null
    : `resolves to ${bad}, a loopback, private, link-local, unspecified, reserved or multicast address (or one that reaches such an address through NAT64, 6to4 or Teredo)`;
}

export class BlockedAddressError extends Error {
  readonly code = 'EADDRBLOCKED';
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http.request that refuses to connect when any address of the host is not public,
 * so the address checked is the address connected to. Honours `all` (Node's happy-eyeballs asks for it).
 */
export function guardedLookup(hostname: string, options: { all?: boolean }, callback: LookupCallback): void {
  lookup(hostname, { all: true, verbatim: true }, (err, addresses) => {
    if (err) return callback(err, '');
    const bad = addresses.find((a) => !isPublicAddress(a.address));
    if (bad !== undefined || addresses.length === 0) {
      return callback(
        new BlockedAddressError(`${hostname} resolves to a non-public address ${bad?.address ?? ''}`),
        '',
      );
    }
    if (options.all) return callback(null, addresses);
    const first = addresses[0]!;
    callback(null, first.address, first.family);
  });
}

/** The literal IP of a URL's host, when it is one (connections to it skip `lookup`). */
export const literalHost = (url: URL): string | null => (isIP(hostOf(url)) === 0 ? null : hostOf(url));
