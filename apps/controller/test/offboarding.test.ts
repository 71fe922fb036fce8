import { describe, expect, it } from "vitest";
import {
  accessAction,
  accessEnding,
  credentialAction,
  isOffboarding,
  withoutFinalizer,
} from "../src/reconcile/offboarding.js";

const team = { metadata: { name: "payments" } };
const secret = (deleting = false, finalizers = ["berth.dev/aso-credential"]) => ({
  metadata: {
    name: "aso-credential",
    namespace: "payments",
    finalizers,
    ...(deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
  },
});

describe("offboarding decisions", () => {
  it("applies while the team exists and its secret is not being deleted", () => {
    expect(isOffboarding(team, secret())).toBe(false);
    expect(credentialAction({ team, secret: secret() })).toEqual({ action: "apply" });
    expect(credentialAction({ team, secret: undefined })).toEqual({ action: "apply" });
  });

  it("holds the finalizer while ASO resources remain in the team namespace", () => {
    expect(credentialAction({ team: undefined, secret: secret(), remainingAso: ["ResourceGroup/rg"] })).toEqual({
      action: "hold",
      remaining: ["ResourceGroup/rg"],
    });
    expect(credentialAction({ team, secret: secret(true), remainingAso: ["StorageAccount/x"] })).toMatchObject({
      action: "hold",
    });
  });

  it("deletes the credential of a removed team once nothing remains, then releases the finalizer", () => {
    expect(credentialAction({ team: undefined, secret: secret(), remainingAso: [] })).toEqual({ action: "delete" });
    expect(credentialAction({ team: undefined, secret: secret(true), remainingAso: [] })).toEqual({
      action: "release",
    });
    expect(credentialAction({ team, secret: secret(true), remainingAso: [] })).toEqual({ action: "release" });
  });

  it("never re-creates the secret of a deleted team", () => {
    expect(credentialAction({ team: undefined, secret: undefined })).toEqual({ action: "none" });
    expect(
      credentialAction({
        team: { metadata: { name: "payments", deletionTimestamp: "2026-01-01T00:00:00Z" } },
        secret: undefined,
      }),
    ).toEqual({ action: "none" });
  });

  it("keeps other finalizers", () => {
    expect(withoutFinalizer(secret(true, ["a", "berth.dev/aso-credential", "b"]))).toEqual(["a", "b"]);
  });

  it("keeps other finalizers of the RoleBinding too", () => {
    expect(
      withoutFinalizer(binding(true, ["a", "berth.dev/controller-access"]), "berth.dev/controller-access"),
    ).toEqual(["a"]);
  });

  it("refuses to decide offboarding without knowing what remains", () => {
    expect(() => credentialAction({ team: undefined, secret: secret() })).toThrow();
  });
});

const binding = (deleting = false, finalizers = ["berth.dev/controller-access"]) => ({
  metadata: {
    name: "berth-controller",
    namespace: "payments",
    finalizers,
    ...(deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
  },
});

describe("the controller's RoleBinding (finalizer berth.dev/controller-access)", () => {
  it("is left alone while it is not being deleted, or carries no finalizer of ours", () => {
    expect(accessAction(binding(), undefined)).toEqual({ action: "none" });
    expect(accessAction(binding(true, []), undefined)).toEqual({ action: "none" });
    expect(accessAction(undefined, undefined)).toEqual({ action: "none" });
  });

  it("is kept while the credential still has its finalizer: the binding is what lets the controller release it", () => {
    expect(accessAction(binding(true), secret())).toEqual({ action: "keep" });
    expect(accessAction(binding(true), secret(true))).toEqual({ action: "keep" });
  });

  it("is released once the credential is gone or its finalizer released", () => {
    expect(accessAction(binding(true), undefined)).toEqual({ action: "release" });
    expect(accessAction(binding(true), secret(true, ["someone-else"]))).toEqual({ action: "release" });
  });

  it("means no new credential is written while it is being deleted", () => {
    expect(accessEnding(binding(true))).toBe(true);
    expect(accessEnding(binding())).toBe(false);
    expect(accessEnding(undefined)).toBe(false);
  });
});
