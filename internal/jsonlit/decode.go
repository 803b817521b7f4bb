package jsonlit

import (
	"encoding/json"
	"reflect"
	"sync/atomic"
	"unsafe"

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

// OnePass returns the options of Decode's one pass, joined with more
// (unmarshalers, say), for a caller that runs the decoder itself: where
// jsonv2.Unmarshal with them fails, that caller must decode again with
// Decode, as Decode does.
func OnePass(more ...jsonv2.Options) jsonv2.Options {
	return jsonv2.JoinOptions(append([]jsonv2.Options{onePass}, more...)...)
}

// Decode unmarshals msg into *v exactly as json.Unmarshal does, in one
// pass over msg when it is valid JSON of the expected types (nearly every
// frame). When that pass stops at an error (bad JSON, or a field of
// another JSON type than its Go type, which encoding/json skips and goes
// on), *v is reset and decoded again by json.Unmarshal, so that what is
// decoded and the error returned are encoding/json's.
//
// Before that pass, FastDecode tries its own, faster one; where it says
// no, *v is reset and the pass above runs. *v should be the zero value,
// as on a fallback it is reset to it.
func Decode[T any](msg []byte, v *T) error {
	_, _, err := DecodeMarked(msg, v, nil)
	return err
}

// DecodeMarked is Decode that also says where the members marks names
// are (see FastDecodeMarked): fast says its own pass decoded msg, and
// only then is marked meaningful.
func DecodeMarked[T any](msg []byte, v *T, marks *Marks) (marked Marked, fast bool, err error) {
	if !legacy.Load() {
		if fast, marked = fastDecodeMarked(msg, planOf(reflect.TypeFor[T]()), unsafe.Pointer(v), nil, marks); fast {
			return marked, true, nil
		}
	}
	var zero T
	*v = zero
	if !legacy.Load() && jsonv2.Unmarshal(msg, v, onePass) == nil {
		return Marked{}, false, nil
	}
	*v = zero
	return Marked{}, false, json.Unmarshal(msg, v)
}

// legacy makes Decode use encoding/json alone.
var legacy atomic.Bool

// SetEncodingJSONOnly makes Decode use encoding/json alone (on) or the
// one pass again (off). Tests use it to hold the one-pass decode, and
// every faster path built on it, to encoding/json's results; a caller
// that has a faster path asks EncodingJSONOnly first.
func SetEncodingJSONOnly(on bool) { legacy.Store(on) }

// EncodingJSONOnly says whether SetEncodingJSONOnly turned the one pass
// off.
func EncodingJSONOnly() bool { return legacy.Load() }
