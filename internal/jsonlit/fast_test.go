package jsonlit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// The types below have every kind of field the fast decoder plans, and a
// few it does not, so that a test can hold it to encoding/json.

// raw keeps a value's bytes, as the dialects' raw types do.
type raw struct {
	B   []byte
	Set bool
}

func (r *raw) UnmarshalJSON(b []byte) error {
	*r = raw{B: bytes.Clone(b), Set: true}
	return nil
}

// text is a string that tolerates other JSON types, as the dialects'
// Str: UnmarshalJSON unquotes a literal, UnmarshalJSONString takes the
// text the fast decoder decoded.
type text struct {
	S   string
	Set bool
}

func (t *text) UnmarshalJSON(b []byte) error {
	*t = text{}
	if b[0] == '"' {
		t.S, t.Set = Unquote(b)
	}
	return nil
}

func (t *text) UnmarshalJSONString(s string) { *t = text{S: s, Set: true} }

// failing refuses every value but a number.
type failing struct{ N string }

func (f *failing) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] < '0' || b[0] > '9' {
		return errors.New("not a number")
	}
	f.N = string(b)
	return nil
}

// either is an object of inner or a string, read by UnmarshalJSON with
// json.Unmarshal and by UnmarshalJSONFast with the fast decoder.
type either struct {
	Obj   bool
	Inner inner
	Text  string
}

func (e *either) UnmarshalJSON(b []byte) error {
	*e = either{}
	switch b[0] {
	case '{':
		e.Obj = true
		var te *json.UnmarshalTypeError
		if err := json.Unmarshal(b, &e.Inner); err != nil && !errors.As(err, &te) {
			return err
		}
	case '"':
		return json.Unmarshal(b, &e.Text)
	}
	return nil
}

func (e *either) UnmarshalJSONFast(d *Dec) bool {
	*e = either{}
	switch d.Kind() {
	case '{':
		e.Obj = true
		return d.Decode(&e.Inner)
	case '"':
		return d.Decode(&e.Text)
	}
	_, ok := d.Value()
	return ok
}

type inner struct {
	Name  string  `json:"name"`
	Code  int32   `json:"code"`
	Ratio float64 `json:"ratio"`
	Small uint8   `json:"small"`
	Raw   raw     `json:"raw"`
}

type Embedded struct {
	Shadowed string `json:"shadowed"`
	Promoted string `json:"promoted"`
}

type deep struct {
	Deeper string `json:"deeper"`
}

type PtrEmbedded struct {
	FromPtr string `json:"fromPtr"`
}

type sample struct {
	Embedded
	*PtrEmbedded
	deep     `json:"deep"`
	Shadowed string            `json:"shadowed"`
	S        string            `json:"s"`
	P        *string           `json:"p"`
	B        bool              `json:"b"`
	I        int               `json:"i"`
	F        float32           `json:"f"`
	In       *inner            `json:"in"`
	List     []inner           `json:"list"`
	Strs     []string          `json:"strs"`
	Raw      raw               `json:"raw"`
	Txt      text              `json:"txt"`
	Txts     []text            `json:"txts"`
	PRaw     *raw              `json:"praw"`
	Fail     failing           `json:"fail"`
	Either   *either           `json:"either"`
	Walk     walked            `json:"walk"`
	Untagged string            // matched by its Go name
	Quoted   int               `json:"quoted,string"`
	Map      map[string]string `json:"map"`
	Any      any               `json:"any"`
	Bytes    []byte            `json:"bytes"`
	//lint:ignore U1000 an unexported field is here to be left alone by both decoders
	unexported string
	Skip       string `json:"-"`
	//lint:ignore SA5008 the tag names the field "-", as encoding/json reads it; both decoders must agree
	Dash string `json:"-,"`
}

var fastCases = []string{
	`{}`,
	` {"s":"x","p":"y","b":true,"i":-3,"f":1.5e2,"untagged":"u"} `,
	`{"s":"esc\"aped \u00e9 \ud83d\ude00 \ud800","p":null,"b":false,"i":0}`,
	"{\"s\":\"bad \xff utf8\"}",
	`{"in":{"name":"n","code":7,"ratio":-0.5,"small":255,"raw":[1, 2]},"list":[{"name":"a"},{"code":2}],"strs":[]}`,
	`{"list":[],"strs":["a","b",null]}`,
	`{"list":null,"in":null,"raw":null,"praw":null}`,
	`{"raw":"text","praw":{"a":[true,false,null,1e-3]}}`,
	`{"Embedded":{"shadowed":"x"},"shadowed":"mine","promoted":"p","fromPtr":"fp","deep":{"deeper":"d"},"deeper":"no"}`,
	`{"either":{"name":"in","code":1}}`,
	`{"either":"text"}`, `{"either":7}`, `{"either":null}`, `{"either":{"code":"x"}}`,
	`{"fail":1}`, `{"fail":"x"}`, `{"fail":null}`,
	`{"txt":"a\nb \u00e9\ud83d\ude00 \ud800x"}`, `{"txt":1}`, `{"txt":null}`, `{"txt":{"a":"b"}}`, `{"txts":["x",2,null,"plain","\"q\""]}`,
	"{\"txt\":\"bad \xff\xfe utf8 \xe2\x82\"}", `{"txt":"\q"}`, `{"txt":"unterminated}`,
	`{"walk":[1,{"a":[null,"x"],"a":{}},[]]}`, `{"walk":{"k":"v","k":[true]}}`, `{"walk":"s"}`, `{"walk":[1,]}`, `{"walk":{"a" 1}}`,
	// unknown members, at depth, of every kind
	`{"zzz":{"a":[1,{"b":"c"}],"d":null},"s":"after","yyy":[[[]]],"xxx":-0.0e+1}`,
	// names encoding/json folds to a field
	`{"S":"upper"}`, `{"UNTAGGED":"x"}`, `{"ſ":"long s"}`, `{"\u0073":"escaped"}`, `{"in":{"NAME":"x"}}`,
	"{\"\u212aey\":1,\"s\":\"k\"}",
	// repeats
	`{"s":"a","s":"b"}`, `{"in":{"name":"a"},"in":{"code":1}}`, `{"zzz":1,"zzz":2}`,
	// type mismatches
	`{"s":1}`, `{"b":"true"}`, `{"i":1.5}`, `{"i":"1"}`, `{"in":[]}`, `{"list":{}}`, `{"in":{"small":256}}`, `{"f":1e39}`,
	// what the plan does not handle
	`{"quoted":"1"}`, `{"map":{}}`, `{"any":1}`, `{"bytes":"AA=="}`, `{"Skip":"x"}`, `{"-":"dash"}`,
	// invalid JSON
	``, `{`, `{"s":"x"`, `{"s":"x",}`, `{"s" "x"}`, `{"s":"x"}x`, `{"s":01}`, `{"s":"\q"}`, "{\"s\":\"\x01\"}",
	`{"zzz":tru}`, `{"zzz":nul}`, `{"zzz":-}`, `{"zzz":1.}`, `{"zzz":1e}`, `[1]`, `"s"`, `null`,
	`{"zzz":[1,]}`, `{"zzz":{"a"}}`, `{"zzz":{"a":1,}}`, `{"zzz":"\u12"}`,
}

// checkFast decodes msg both ways into T and fails when the fast decoder
// says yes and differs from encoding/json (or encoding/json fails).
func checkFast[T any](t *testing.T, msg []byte) bool {
	t.Helper()
	var fast, std T
	ok := FastDecode(msg, &fast, nil)
	err := json.Unmarshal(msg, &std)
	if ok {
		require.NoError(t, err, "%q: the fast decoder said yes", msg)
		require.Equal(t, std, fast, "%q", msg)
	}
	return ok
}

func TestFastDecodeIsEncodingJSON(t *testing.T) {
	yes := 0
	for _, c := range fastCases {
		if checkFast[sample](t, []byte(c)) {
			yes++
		}
	}
	require.Greater(t, yes, 10)
}

// TestFastDecodeSays pins which cases the fast decoder decodes itself
// and which it leaves to the full path.
func TestFastDecodeSays(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		fast bool
	}{
		{`{"s":"x","in":{"raw":"r"},"list":[{"name":"a"}]}`, true},
		{`{"zzz":{"a":[1,{"b":"c"}]},"s":"after"}`, true},
		{`{"either":{"name":"in"}}`, true},
		{`{"fromPtr":"fp"}`, true},
		{`{"S":"upper"}`, false},
		{`{"ſ":"long s"}`, false},
		{`{"\u0073":"escaped"}`, true}, // unquoted, it is the field's name exactly
		{`{"s":"a","s":"b"}`, false},
		{`{"s":1}`, false},
		{`{"map":{}}`, false},
		{`{"s":"x"} x`, false},
		{`{"fail":"x"}`, false},
	} {
		var v sample
		require.Equal(t, tc.fast, FastDecode([]byte(tc.msg), &v, nil), tc.msg)
	}
}

func TestFastDecodeDepth(t *testing.T) {
	deep := bytes.Repeat([]byte("["), maxDepth+1)
	msg := append(append([]byte(`{"zzz":`), deep...), bytes.Repeat([]byte("]"), maxDepth+1)...)
	msg = append(msg, '}')
	var v sample
	require.False(t, FastDecode(msg, &v, nil))
	require.NoError(t, json.Unmarshal(msg, &v))
}

// litTaker takes the values ElideMembers took out.
type litTaker struct {
	Lit *Lit
	Raw []byte
}

func (l *litTaker) UnmarshalJSON(b []byte) error { l.Raw = b; return nil }
func (l *litTaker) TakeLit(x *Lit) bool          { l.Lit = x; return x.Bytes == nil }

func TestFastDecodeTakesLits(t *testing.T) {
	type msg struct {
		A litTaker `json:"a"`
		B litTaker `json:"b"`
		C litTaker `json:"c"`
	}
	light := []byte(`{"a":"","b":"" ,"c":[]}`)
	lits := []Lit{{End: 7, Text: "A"}, {End: 22, Bytes: []byte{1}}}
	var v msg
	require.True(t, FastDecode(light, &v, lits))
	require.Equal(t, "A", v.A.Lit.Text)
	require.Nil(t, v.B.Lit, "no lit ends there")
	require.Equal(t, `""`, string(v.B.Raw))
	require.Equal(t, `[]`, string(v.C.Raw), "TakeLit refused the array")
}

func FuzzFastDecode(f *testing.F) {
	for _, c := range fastCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		checkFast[sample](t, msg)
		checkFast[inner](t, msg)
	})
}

func TestPlanFields(t *testing.T) {
	p := planOf(reflect.TypeFor[sample]())
	require.Equal(t, kStruct, p.kind)
	for _, name := range []string{"shadowed", "promoted", "fromPtr", "deep", "Untagged", "-"} {
		require.NotNil(t, p.fields.exact[name], name)
	}
	for _, name := range []string{"Embedded", "deeper", "Skip", "unexported"} {
		_, ok := p.fields.exact[name]
		require.False(t, ok, name)
	}
}

// TestFastDecodeMarked: the marks are the members of the marked names in
// the objects of the marked type, in the frame's order, matched as
// encoding/json matches names to fields (whether the type has the field
// or not), with their name literals as sent; members of other objects are
// not marked, and Objects and N count what the decode met.
func TestFastDecodeMarked(t *testing.T) {
	type inner struct {
		Out  raw `json:"out"`
		Note string
	}
	type outer struct {
		A     *inner `json:"a"`
		B     *inner `json:"b"`
		Other struct {
			Out raw `json:"out"`
		} `json:"other"`
	}
	marks := NewMarks(reflect.TypeFor[inner](), "out", "meta", "sk")
	for _, c := range []struct {
		name, msg  string
		objects, n int
		want       []string // each mark held: its name's index, its name's literal and its value
	}{
		{"a field and a member the type lacks", `{"a":{"out":[1],"Note":"x","meta":{"k":1}}}`, 1, 2,
			[]string{`0 "out" [1]`, `1 "meta" {"k":1}`}},
		{"names as encoding/json matches them", `{"a":{"META":1, "m\u0065ta" : 2,"Meta":3}}`, 1, 3,
			[]string{`1 "META" 1`, `1 "m\u0065ta" 2`, `1 "Meta" 3`}},
		{"non-ASCII folds (ſ to S, the Kelvin sign to K)", "{\"a\":{\"\\u017f\\u212a\":0,\"meta\":true},\"b\":{\"ſK\":null}}", 2, 3,
			[]string{`2 "\u017f\u212a" 0`, `1 "meta" true`, `2 "ſK" null`}},
		{"not in other objects", `{"other":{"out":1,"meta":2},"a":{}}`, 1, 0, nil},
		{"more than MaxMarked", `{"a":{"meta":1,"meta":2,"meta":3,"meta":4,"meta":5}}`, 1, 5,
			[]string{`1 "meta" 1`, `1 "meta" 2`, `1 "meta" 3`, `1 "meta" 4`}},
		{"longer and shorter names", `{"a":{"outs":1,"ou":2,"metameta":3,"s":4}}`, 1, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var v outer
			ok, marked := FastDecodeMarked([]byte(c.msg), &v, nil, marks)
			require.True(t, ok)
			require.Equal(t, c.objects, marked.Objects)
			require.Equal(t, c.n, marked.N)
			var got []string
			for _, m := range marked.Marks[:min(marked.N, MaxMarked)] {
				val := c.msg[m.Value:]
				end := ValueEnd([]byte(val), 0)
				got = append(got, fmt.Sprintf("%d %s %s", m.Name, c.msg[m.Key[0]:m.Key[1]], val[:end]))
			}
			require.Equal(t, c.want, got)
		})
	}
}
