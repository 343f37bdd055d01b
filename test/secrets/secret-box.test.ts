import { describe, expect, it } from "vitest";
import { openSecret, sealSecret, secretBoxKey, secretHint, SecretBoxError } from "../../secrets/secret-box.ts";

const DEPLOYMENT_SECRET = "k".repeat(40);

describe("secret box", () => {
  it("opens what it sealed, and the seal does not contain the plaintext", async () => {
    const key = await secretBoxKey(DEPLOYMENT_SECRET, "provider-key");
    const sealed = await sealSecret(key, "sk-live-abcdef123456", "tenant:t1/provider:openai");
    expect(sealed).not.toContain("sk-live");
    expect(sealed.startsWith("v1.")).toBe(true);
    expect(await openSecret(key, sealed, "tenant:t1/provider:openai")).toBe("sk-live-abcdef123456");
  });

  it("two seals of one secret differ (fresh nonce each time)", async () => {
    const key = await secretBoxKey(DEPLOYMENT_SECRET, "provider-key");
    expect(await sealSecret(key, "same", "c")).not.toBe(await sealSecret(key, "same", "c"));
  });

  it("a seal moved to another context, purpose or deployment secret does not open", async () => {
    const key = await secretBoxKey(DEPLOYMENT_SECRET, "provider-key");
    const sealed = await sealSecret(key, "secret", "tenant:t1/provider:openai");
    await expect(openSecret(key, sealed, "tenant:t2/provider:openai")).rejects.toBeInstanceOf(SecretBoxError);
    await expect(openSecret(await secretBoxKey(DEPLOYMENT_SECRET, "tool-secret"), sealed, "tenant:t1/provider:openai")).rejects.toBeInstanceOf(SecretBoxError);
    await expect(openSecret(await secretBoxKey("x".repeat(40), "provider-key"), sealed, "tenant:t1/provider:openai")).rejects.toBeInstanceOf(SecretBoxError);
  });

  it("refuses tampered or malformed seals and short deployment secrets", async () => {
    const key = await secretBoxKey(DEPLOYMENT_SECRET, "tool-secret");
    const sealed = await sealSecret(key, "secret", "c");
    // One character of the ciphertext changed, where all six of its bits count (the last
    // characters of base64 may carry padding bits, and changing those changes no byte).
    const at = sealed.lastIndexOf(".") + 2;
    const tampered = `${sealed.slice(0, at)}${sealed[at] === "A" ? "B" : "A"}${sealed.slice(at + 1)}`;
    expect(tampered).not.toBe(sealed);
    await expect(openSecret(key, tampered, "c")).rejects.toBeInstanceOf(SecretBoxError);
    await expect(openSecret(key, "v1.!!.??", "c")).rejects.toBeInstanceOf(SecretBoxError);
    await expect(openSecret(key, "plain-text", "c")).rejects.toBeInstanceOf(SecretBoxError);
    await expect(secretBoxKey("short", "tool-secret")).rejects.toBeInstanceOf(SecretBoxError);
  });

  it("hints show only the last four characters of a long secret", () => {
    expect(secretHint("sk-proj-1234567890abcd")).toBe("…abcd");
    expect(secretHint("short")).toBe("…");
  });
});
