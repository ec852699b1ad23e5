// Every WebGPU failure becomes one GpuError {kind, message} (webgpu-samples' fail() idea).
// Kinds: "no-webgpu", "no-adapter", "limits", "device-lost", "out-of-memory",
// "validation", "internal", "shader", "fetch", "input".
import { _ } from "../i18n.js";

export class GpuError extends Error {
  constructor(kind, message, cause) {
    super(message);
    this.name = "GpuError";
    this.kind = kind;
    if (cause !== undefined) this.cause = cause;
  }
  toJSON() {
    return { kind: this.kind, message: this.message };
  }
}

/** The one failure path: wrap anything thrown into a GpuError the lab can show. */
export function fail(kind, message, cause) {
  if (cause instanceof GpuError) return cause;
  return new GpuError(kind, message, cause);
}

/** Any thrown value as a GpuError; WebGPU's own error names map to their kinds. */
export function asGpuError(err, kind = "internal") {
  if (err instanceof GpuError) return err;
  const msg = (err && err.message) || String(err);
  if (err && err.name === "GPUPipelineError")
    return fail("validation", _("The GPU refused a kernel: {error}", { error: msg }), err);
  if (err && err.name === "OperationError")
    return fail("out-of-memory", _("The GPU ran out of memory: {error}", { error: msg }), err);
  return fail(kind, msg, err);
}
