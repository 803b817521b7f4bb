package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/acpnorm/acpnorm/internal/jsonlit"
)

// MaxAskRejects bounds the reject options a permission ask is read with
// (ACP's kinds give an ask two: reject_once and reject_always).
const MaxAskRejects = 16

// askOptions are the `options` of a session/request_permission as Read
// keeps them: the optionIds of the first MaxAskRejects distinct options
// whose kind starts with "reject", and a count of the reject options
// after them. A frame may hold hundreds of thousands of options (up to
// the message limit); they are walked in the bytes the decoder validated,
// never decoded into a list: an optionId is unquoted only when it is
// kept, a kind only when it is escaped.
//
// What is kept is what encoding/json's decode of the options into
// []struct{OptionID, Kind string} gives (member names matched
// case-insensitively, the last of a repeated member winning, null
// leaving a field as it was, a member or an element of another JSON type
// left as it was), filtered and bounded as above; bad is the first type
// error that decode meets, worded as it words it (TestAskOptionsAreEncodingJSON
// and FuzzAskOptions hold it to that). A repeated `options` member reads
// as the last one alone, where encoding/json would merge it into the
// elements of the one before.
type askOptions struct {
	reject []string
	unread int
	// bad is the first type error, its Field relative to params
	// ("options.3.kind"); nil when there is none.
	bad *json.UnmarshalTypeError
}

// askOption is the Go type of one option in encoding/json's decode, for
// the type errors that name it.
type askOption struct {
	OptionID string `json:"optionId"`
	Kind     string `json:"kind"`
}

// UnmarshalJSON implements json.Unmarshaler; it never fails. b is a
// valid JSON value, as every decoder hands it over.
func (a *askOptions) UnmarshalJSON(b []byte) error {
	*a = askOptions{}
	b = bytes.TrimSpace(b)
	switch {
	case isNull(b):
		return nil
	case b[0] != '[':
		a.typeError(b, "options", reflect.TypeFor[[]askOption]())
		return nil
	}
	i := 0
	jsonlit.EachElement(b, func(el []byte) bool {
		a.option(el, i)
		i++
		return true
	})
	return nil
}

// option reads the i-th option, el.
func (a *askOptions) option(el []byte, i int) {
	switch el[0] {
	case 'n':
		return
	case '{':
	default:
		a.typeError(el, "options."+strconv.Itoa(i), reflect.TypeFor[askOption]())
		return
	}
	// id and kind are the literals their members last set, nil for none.
	var id, kind []byte
	eachMember(el, func(key, val []byte) {
		var to *[]byte
		switch jsonlit.FoldKey(key) {
		case "OPTIONID":
			to = &id
		case "KIND":
			to = &kind
		default:
			return
		}
		switch val[0] {
		case '"':
			*to = val
		case 'n':
		default:
			if a.bad == nil {
				a.typeError(val, "options."+strconv.Itoa(i)+"."+keyText(key), reflect.TypeFor[string]())
			}
		}
	})
	if kind == nil || !hasRejectPrefix(kind) {
		return
	}
	if id == nil {
		id = []byte(`""`)
	}
	// An id without an escape, in valid UTF-8, is its own bytes: it is
	// compared as they are, and copied only to be kept.
	in := id[1 : len(id)-1]
	plain := bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in)
	text := ""
	if !plain {
		text, _ = jsonlit.Unquote(id)
	}
	for _, k := range a.reject {
		if plain && string(in) == k || !plain && text == k {
			return
		}
	}
	if len(a.reject) == MaxAskRejects {
		a.unread++
		return
	}
	if plain {
		text = string(in)
	}
	a.reject = append(a.reject, text)
}

// hasRejectPrefix says whether the string literal lit decodes to a text
// that starts with "reject". Without an escape its bytes say it: an
// invalid byte decodes to U+FFFD, which is no ASCII letter.
func hasRejectPrefix(lit []byte) bool {
	if bytes.IndexByte(lit, '\\') < 0 {
		return bytes.HasPrefix(lit[1:], []byte("reject"))
	}
	s, _ := jsonlit.Unquote(lit)
	return strings.HasPrefix(s, "reject")
}

// typeError notes the first type error: a value val where a Go value of
// type t was expected, at field.
func (a *askOptions) typeError(val []byte, field string, t reflect.Type) {
	if a.bad == nil {
		a.bad = &json.UnmarshalTypeError{Value: jsonTypeOf(val), Type: t, Field: field}
	}
}

// jsonTypeOf names the JSON type of the valid value val as encoding/json's
// type errors do.
func jsonTypeOf(val []byte) string {
	switch val[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	}
	return "number"
}

// strictAsk returns the first type error of a permission ask's strict
// layer in params (not null): params not an object, a toolCall that is
// no object or whose toolCallId is no string, options as askOptions
// reads them. It is nil when there is none.
func strictAsk(params []byte) *json.UnmarshalTypeError {
	params = bytes.TrimSpace(params)
	if params[0] != '{' {
		return &json.UnmarshalTypeError{Value: jsonTypeOf(params), Type: reflect.TypeFor[permissionEnvelope]()}
	}
	var first *json.UnmarshalTypeError
	eachMember(params, func(key, val []byte) {
		if first != nil {
			return
		}
		switch jsonlit.FoldKey(key) {
		case "TOOLCALL":
			var tc struct {
				ToolCallID string `json:"toolCallId"`
			}
			var te *json.UnmarshalTypeError
			if errors.As(json.Unmarshal(val, &tc), &te) {
				te.Field = strings.TrimSuffix(keyText(key)+"."+te.Field, ".")
				first = te
			}
		case "OPTIONS":
			var o askOptions
			o.UnmarshalJSON(val)
			if first = o.bad; first != nil {
				// Named as the frame spells it.
				first.Field = keyText(key) + strings.TrimPrefix(first.Field, "options")
			}
		}
	})
	return first
}

// eachMember calls fn with the key literal and the value of every member
// of the valid JSON object b, in order (jsonlit.EachMember, with the key
// as sent: encoding/json names a member in its errors as the frame
// spells it).
func eachMember(b []byte, fn func(key, val []byte)) {
	i := jsonlit.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return
	}
	i = jsonlit.SkipSpace(b, i+1)
	for i < len(b) && b[i] == '"' {
		ke := jsonlit.StringEnd(b, i)
		key := b[i:ke]
		i = jsonlit.SkipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return
		}
		i = jsonlit.SkipSpace(b, i+1)
		ve := jsonlit.ValueEnd(b, i)
		fn(key, b[i:ve])
		i = jsonlit.SkipSpace(b, ve)
		if i >= len(b) || b[i] != ',' {
			return
		}
		i = jsonlit.SkipSpace(b, i+1)
	}
}
