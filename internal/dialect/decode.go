package dialect

import (
	"encoding/json"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// onePass are the options of the one-pass decode: every behaviour of
// encoding/json (case-insensitive names, invalid UTF-8 read as U+FFFD,
// duplicate names, null leaving a value as it was, UnmarshalJSON methods
// called with the raw value) except its error handling, which validates
// the whole input in a scan of its own before decoding and goes on past a
// type error. Without it the input is validated as it is decoded, in one
// pass, and the first error stops the decode.
var onePass = jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsonv1.ReportErrorsWithLegacySemantics(false))

// decode unmarshals msg into *v exactly as json.Unmarshal does, in one
// pass over msg when it is valid JSON of the expected types (nearly every
// frame). When that pass stops at an error (bad JSON, or a field of
// another JSON type than its Go type, which encoding/json skips and goes
// on), *v is reset and decoded again by json.Unmarshal, so that what is
// decoded and the error returned are encoding/json's.
func decode[T any](msg []byte, v *T) error {
	if !legacyDecode && jsonv2.Unmarshal(msg, v, onePass) == nil {
		return nil
	}
	var zero T
	*v = zero
	return json.Unmarshal(msg, v)
}

// legacyDecode makes decode use encoding/json alone; tests set it to hold
// the one-pass decode to encoding/json's results.
var legacyDecode bool
