// Package jsonlit reads JSON literals fast and exactly as encoding/json
// does: the helpers that agent dialects decode frames with, and nothing
// about any agent.
//
//   - FastDecode is json.Unmarshal for the common case, in a pass of its
//     own: a plan per Go type compiled once by reflection (encoding/json's
//     field rules), one scan that validates what encoding/json validates,
//     decodes only into the fields and skips every other value, and says
//     no on any doubt (a name that could fold to a field, a repeated
//     field, a type mismatch, a type it does not plan). A type can decode
//     itself in that pass (FastUnmarshaler) or take back a value Elide
//     took out (LitTaker); such a type walks its value in the decoder's
//     pass with Dec's Elements, Members, Str and ByteArray.
//     FastDecodeMarked (DecodeMarked after it) also says where the
//     members of some names are in the objects of one type (Marks), so
//     that a caller that looks at what it does not decode need not walk
//     the frame again to find them.
//   - Decode is json.Unmarshal: FastDecode first, then one pass of
//     go-json-experiment's decoder with encoding/json's semantics, then
//     json.Unmarshal itself whenever that pass stops, so results and
//     errors are encoding/json's.
//   - Unquote, DecodeLiteral and DecodeByteArray decode one string
//     literal or one array of bytes, eight bytes at a time where they can
//     (every string literal, the fast decoder's included, is decoded by
//     one routine, decodeInto, which validates it in the same pass;
//     Unquote of a text of long plain runs writes them through a
//     strings.Builder);
//     EachMember, EachElement, FoldKey, KeyIs, SkipSpace, StringEnd and
//     ValueEnd walk JSON that a decoder has already validated.
//   - Elide takes the big content texts (and byte arrays) out of an ACP
//     tool call frame, decoded once, so that a decoder reads a light copy;
//     a text that begins with what the same call of the same scope sent
//     before is decoded only from where it differs (a bounded memo).
//     ElideMembers also takes out the other members a caller names, a
//     lazy text only validated (ValidLiteral) and left for the caller to
//     unquote when it reads it.
//
// What holds this package to encoding/json is its fuzz targets
// (FuzzFastDecode, FuzzKeyIs, FuzzUnquote, FuzzStringDecoders, FuzzDecodeLiteral,
// FuzzDecodeByteArray, FuzzMemoDecode) and, in internal/dialect, the tests and fuzz targets
// that read every recorded frame with every dialect both ways
// (FuzzFastDecode, FuzzOnePassDecode, FuzzElidedDecode). test/run.sh runs every fuzz target of internal/...
package jsonlit
