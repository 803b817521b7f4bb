// What a Session sends in place of a frame over the server's limit
// (docs/contract.md: the client resends the rest, leaving that one out).
// Internal: index.ts does not export it.

import { clone, create } from "@bufbuild/protobuf";
import { AcpFrameSchema, NormalizeRequestSchema, type AcpFrame, type NormalizeRequest } from "./gen/acpnorm/v1/normalizer_pb.js";

/**
 * The message sent in place of a frame over the server's limit: a
 * notification of a method no agent sends, which acpnormd reads as nothing
 * (every method it does not know is skipped without an error).
 */
export const LEFT_OUT = new TextEncoder().encode(`{"jsonrpc":"2.0","method":"$/acpnorm/left_out"}`);

/**
 * The request sent in place of frame f, over the server's limit: a copy of
 * f, every field kept (as the Go client clones it), with LEFT_OUT for its
 * message. f, which the Session may hold, is not changed.
 */
export function leftOut(f: AcpFrame): NormalizeRequest {
  const c = clone(AcpFrameSchema, f);
  c.message = LEFT_OUT;
  return create(NormalizeRequestSchema, { kind: { case: "frame", value: c } });
}
