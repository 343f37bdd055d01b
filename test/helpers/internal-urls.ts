import type { AddressRule } from "../../schema/egress-policy.ts";

// The internal addresses of issue 30 (item 7), each with the rule of schema/egress-policy.ts that
// refuses it: every one of them was accepted at registration and then contacted before the policy.
// Shared by the policy's unit tests, the registration tests over REST and the e2e tests.

/** The list: each was accepted at registration and contacted before the policy. */
export const INTERNAL_URLS: readonly (readonly [string, AddressRule])[] = [
  ["https://127.0.0.1/", "loopback"],
  ["https://localhost/", "loopback"],
  ["https://[::1]/", "loopback"],
  ["https://0.0.0.0/", "unspecified"],
  ["https://2130706433/", "loopback"],
  ["https://0177.0.0.1/", "loopback"],
  ["https://0x7f.1/", "loopback"],
  ["https://[::ffff:127.0.0.1]/", "loopback"],
  ["https://localhost./", "loopback"],
  ["https://foo.localhost/", "loopback"],
  ["https://10.0.0.1/", "private"],
  ["https://172.16.0.1/", "private"],
  ["https://192.168.1.1/", "private"],
  ["https://169.254.169.254/latest/meta-data", "link_local"],
  ["https://metadata.google.internal/computeMetadata/v1/", "internal_name"],
  ["https://[fd00::1]/", "private"],
];
