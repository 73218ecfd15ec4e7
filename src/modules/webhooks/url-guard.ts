// Owns the rule that webhooks never reach into our own network (SSRF): a URL must be http(s) and
// every address its host resolves to must be public, checked when the URL is saved and again on
// each connection (a DNS answer can change after the check: rebinding).
import { type LookupAddress, lookup } from 'node:dns';
import { BlockList, isIP } from 'node:net';

const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network", includes the unspecified address
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, includes cloud metadata endpoints
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved and broadcast
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 96], // unspecified, loopback and the old IPv4-compatible form
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

/** An IPv4 address written as IPv6 (::ffff:a.b.c.d or ::ffff:hhhh:hhhh), as IPv4; else null. */
function mappedV4(address: string): string | null {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted) return dotted[1]!;
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex === null) return null;
  const hi = Number.parseInt(hex[1]!, 16);
  const lo = Number.parseInt(hex[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** True for an address a webhook may be sent to. */
export function isPublicAddress(address: string): boolean {
  const v4 = isIP(address) === 6 ? mappedV4(address) : address;
  if (v4 !== null && isIP(v4) === 4) return !blocked.check(v4, 'ipv4');
  if (isIP(address) === 6) return !blocked.check(address, 'ipv6');
  return false;
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
    : `resolves to ${bad}, a loopback, private, link-local, unspecified or multicast address`;
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
