package jsonlit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// walked records a value's shape: every string's text, every other
// scalar's bytes and every member name's literal, in order, arrays and
// objects bracketed. UnmarshalJSON walks the raw value with EachElement
// and EachMemberLit and unquotes strings with Unquote, UnmarshalJSONFast
// walks it in the fast decoder's pass with Elements, Members and Str, so
// that a test can hold the one to the other.
type walked struct{ Seq []string }

func (w *walked) UnmarshalJSON(b []byte) error {
	*w = walked{}
	w.walk(b)
	return nil
}

func (w *walked) walk(b []byte) {
	switch b[0] {
	case '[':
		w.Seq = append(w.Seq, "[")
		EachElement(b, func(v []byte) bool { w.walk(v); return true })
		w.Seq = append(w.Seq, "]")
	case '{':
		w.Seq = append(w.Seq, "{")
		EachMemberLit(b, func(k, v []byte) { w.Seq = append(w.Seq, string(k)+":"); w.walk(v) })
		w.Seq = append(w.Seq, "}")
	case '"':
		text, ok := Unquote(b)
		w.Seq = append(w.Seq, fmt.Sprintf("text %q %v", text, ok))
	default:
		w.Seq = append(w.Seq, string(b))
	}
}

func (w *walked) UnmarshalJSONFast(d *Dec) bool {
	*w = walked{}
	return w.fast(d)
}

func (w *walked) fast(d *Dec) bool {
	switch d.Kind() {
	case '[':
		w.Seq = append(w.Seq, "[")
		ok := d.Elements(func() bool { return w.fast(d) })
		w.Seq = append(w.Seq, "]")
		return ok
	case '{':
		w.Seq = append(w.Seq, "{")
		ok := d.Members(func(k []byte) bool { w.Seq = append(w.Seq, string(k)+":"); return w.fast(d) })
		w.Seq = append(w.Seq, "}")
		return ok
	case '"':
		text, ok := d.Str()
		w.Seq = append(w.Seq, fmt.Sprintf("text %q %v", text, ok))
		return ok
	}
	v, ok := d.Value()
	w.Seq = append(w.Seq, string(v))
	return ok
}

// walkCases are values of a walked member, valid and not.
var walkCases = []string{
	`[]`, `{}`, `[ ]`, `{ }`, ` [ 1 , "a" , null ] `, `{ "a" : 1 , "b" : [ ] }`,
	`[[],[[]],{},{"a":{"b":[1,{"c":null}]}}]`,
	`{"a":1,"a":2,"A":3}`, `{"\u0061":"x","\"q\"":"y","é":"z","\ud800":1}`,
	"{\"bad \xff name\":1}", `["esc\"aped","\u00e9",true,false,-0.5e+3]`,
	`["","plain","a\nb \u00e9\ud83d\ude00 \ud800x \\ \/","short","short","a long string of more than twenty-four bytes"]`,
	"[\"bad \xff\xfe utf8 \xe2\x82\", \"\xed\xa0\x80\"]",
	`null`, `"s"`, `1`, `true`,
	// invalid JSON
	`[`, `[1,]`, `[,1]`, `[1 2]`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `{"a" 1}`, `{"a":1 "b":2}`, `{1:2}`,
	`{"\q":1}`, "{\"\x01\":1}", `["\u12"]`, `[tru]`, `{"a":[}`, `[}`, `{]`,
}

func TestElementsMembersAreEachElementEachMember(t *testing.T) {
	type msg struct {
		W walked `json:"w"`
		S string `json:"s"`
	}
	yes := 0
	for _, c := range walkCases {
		for _, in := range []string{`{"w":` + c + `}`, `{"w":` + c + `,"s":"after"}`} {
			var fast, std msg
			ok := FastDecode([]byte(in), &fast, nil)
			err := json.Unmarshal([]byte(in), &std)
			if err != nil {
				require.False(t, ok, "%s: the fast decoder said yes", in)
				continue
			}
			require.True(t, ok, "%s: valid, in the fast decoder's reach", in)
			require.Equal(t, std, fast, in)
			yes++
		}
	}
	require.Greater(t, yes, 20)
}

// TestElementsMembersSayNo: a callback that says no, a value of another
// JSON type, and nesting deeper than the decoder reads stop the decode.
func TestElementsMembersSayNo(t *testing.T) {
	for _, c := range []struct {
		name, msg string
		read      func(d *Dec) bool
	}{
		{"each says no", `[1,2]`, func(d *Dec) bool { return d.Elements(func() bool { d.Value(); return false }) }},
		{"each says no to a member", `{"a":1}`, func(d *Dec) bool { return d.Members(func([]byte) bool { d.Value(); return false }) }},
		{"each reads nothing", `[1,2]`, func(d *Dec) bool { return d.Elements(func() bool { return true }) }},
		{"each reads no value", `{"a":1}`, func(d *Dec) bool { return d.Members(func([]byte) bool { return true }) }},
		{"not an array", `{"a":1}`, func(d *Dec) bool { return d.Elements(func() bool { _, ok := d.Value(); return ok }) }},
		{"Str not at a string", `[1]`, func(d *Dec) bool { return d.Elements(func() bool { _, ok := d.Str(); return ok }) }},
		{"not an object", `[1]`, func(d *Dec) bool { return d.Members(func([]byte) bool { _, ok := d.Value(); return ok }) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var v struct {
				W fastFunc `json:"w"`
			}
			v.W.read = c.read
			require.False(t, FastDecode([]byte(`{"w":`+c.msg+`}`), &v, nil))
		})
	}
	deep := string(bytes.Repeat([]byte("["), maxDepth+1)) + string(bytes.Repeat([]byte("]"), maxDepth+1))
	var v struct {
		W walked `json:"w"`
	}
	require.False(t, FastDecode([]byte(`{"w":`+deep+`}`), &v, nil))
	require.NoError(t, json.Unmarshal([]byte(`{"w":`+deep+`}`), &v))
}

// fastFunc reads its value with read.
type fastFunc struct{ read func(d *Dec) bool }

func (f *fastFunc) UnmarshalJSON([]byte) error    { return nil }
func (f *fastFunc) UnmarshalJSONFast(d *Dec) bool { return f.read(d) }

// keyIsCases are member name literals (valid and not) and upper-case names
// to ask KeyIs about.
var keyIsCases = []struct{ lit, upper string }{
	{`"id"`, "ID"}, {`"ID"`, "ID"}, {`"Id"`, "ID"}, {`"iD"`, "ID"}, {`"idx"`, "ID"}, {`"i"`, "ID"}, {`""`, "ID"}, {`""`, ""},
	{`"optionId"`, "OPTIONID"}, {`"OPTIONID"`, "OPTIONID"}, {`"option_id"`, "OPTIONID"}, {`"optionI"`, "OPTIONID"},
	{`"\u0069d"`, "ID"}, {`"i\u0044"`, "ID"}, {`"\"id"`, "ID"}, {`"i\\d"`, "I\\D"},
	{"\"\u212aind\"", "KIND"}, {"\"\u212aIND\"", "KIND"}, {`"\u212aind"`, "KIND"}, {"\"\u017fkind\"", "SKIND"},
	{"\"\u0131d\"", "ID"}, {"\"i\xffd\"", "ID"}, {"\"\xff\"", "\xff"}, {`"kind"`, "KIND"}, {`"KIND"`, "KIND"},
	{`"[d"`, "[D"}, {`"@"`, "`"}, {`"{"`, "["}, {`"~"`, "^"}, {`"id1"`, "ID1"},
	{`"`, "ID"}, {``, ""},
}

func TestKeyIsFoldKey(t *testing.T) {
	for _, c := range keyIsCases {
		require.Equal(t, FoldKey([]byte(c.lit)) == c.upper, KeyIs([]byte(c.lit), c.upper), "%q %q", c.lit, c.upper)
	}
}

func FuzzKeyIs(f *testing.F) {
	for _, c := range keyIsCases {
		f.Add([]byte(c.lit), c.upper)
	}
	f.Fuzz(func(t *testing.T, lit []byte, name string) {
		// KeyIs is asked only about names FoldKey could return: ASCII
		// without lower-case letters. The name is made one.
		upper := []byte(name)
		for i, c := range upper {
			if c >= 0x80 {
				upper[i] = c & 0x7f
			}
			if 'a' <= upper[i] && upper[i] <= 'z' {
				upper[i] -= 'a' - 'A'
			}
		}
		require.Equal(t, FoldKey(lit) == string(upper), KeyIs(lit, string(upper)), "%q %q", lit, upper)
		// And about the key itself, folded, when it is such a name.
		if k := FoldKey(lit); !bytes.ContainsFunc([]byte(k), func(r rune) bool { return r >= 0x80 || 'a' <= r && r <= 'z' }) {
			require.True(t, KeyIs(lit, k), "%q %q", lit, k)
		}
	})
}

// TestByteArrayIsDecodeByteArray: ByteArray reads what DecodeByteArray
// reads, in the decoder's pass, and leaves the decoder where it was on
// any other value, which is then read whole otherwise.
func TestByteArrayIsDecodeByteArray(t *testing.T) {
	for _, c := range []string{`[]`, `[ ]`, `[0,255]`, "[ 1 ,\n2 ]", `[256]`, `[1.0]`, `[01]`, `[-1]`, `[1,"a"]`, `[[1]]`, `"x"`, `null`, `{}`, `[1,]`} {
		var got []byte
		var read bool
		var v struct {
			W fastFunc `json:"w"`
			S string   `json:"s"`
		}
		v.W.read = func(d *Dec) bool {
			start := d.i
			if got, read = d.ByteArray(); read {
				return true
			}
			require.Equal(t, start, d.i, "%s: not read, and the decoder moved", c)
			_, ok := d.Value()
			return ok
		}
		msg := `{"w":` + c + `,"s":"after"}`
		ok := FastDecode([]byte(msg), &v, nil)
		require.Equal(t, json.Valid([]byte(msg)), ok, msg)
		out, _, want := DecodeByteArray([]byte(c))
		require.Equal(t, want, read, c)
		if want {
			require.Equal(t, out, got, c)
			require.Equal(t, "after", v.S, c)
		}
	}
}
