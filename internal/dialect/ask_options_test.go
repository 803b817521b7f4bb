package dialect

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/jsonlit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// askFrame is a permission ask whose options are opts, joined.
func askFrame(opts []string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":9,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c1","kind":"execute","title":"rm x","rawInput":{"command":"rm x"}},"options":[` + strings.Join(opts, ",") + `]}}`)
}

// allocated is the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A permission ask may hold as many options as the message limit lets it
// (16 MiB of them by default); reading one keeps at most MaxAskRejects
// reject optionIds and allocates what it keeps, not a list of every
// option: neither when the frame is sound nor when an option's type
// error makes the frame be read again strictly.
func TestAskOptionsReadWithoutAList(t *testing.T) {
	var opts []string
	size, frame := 0, 4<<20
	if raceDetector {
		frame = 1 << 20 // the detector slows the walk down
	}
	for i := 0; size < frame; i++ {
		o := fmt.Sprintf(`{"optionId":"o%d","kind":"allow_once"}`, i%1000)
		if i%2 == 1 {
			o = fmt.Sprintf(`{"optionId":"r%d","name":"No","kind":"reject_once"}`, i%1000)
		}
		opts = append(opts, o)
		size += len(o) + 1
	}
	msg := askFrame(opts)
	bad := askFrame(append(slices.Clip(opts), `{"optionId":5,"kind":"reject_once"}`))
	unread := 0
	for i := range opts {
		if i%2 == 1 && i%1000 > 2*MaxAskRejects {
			unread++
		}
	}
	const bound = 64 << 10 // a small ask's reading, and the 16 ids kept
	for _, d := range All() {
		name := d.Info().Name
		// What a first frame leaves (the decode plans) is not the
		// frame's.
		_, err := Read(d, askFrame(opts[:100]))
		require.NoError(t, err)
		_, err = Read(d, askFrame([]string{`{"optionId":5}`}))
		require.Error(t, err)
		var f Frame
		n := allocated(func() { f, err = Read(d, msg) })
		require.NoError(t, err, name)
		require.NotNil(t, f.Ask, name)
		want := make([]string, MaxAskRejects)
		for i := range want {
			want[i] = fmt.Sprintf("r%d", 2*i+1)
		}
		assert.Equal(t, want, f.Ask.RejectOptions, name)
		assert.Equal(t, unread, f.Ask.UnreadRejects, "%s: the reject options past the first 16 distinct ones", name)
		assert.LessOrEqual(t, n, uint64(bound), "%s: bytes allocated to read a frame of %d options (%d bytes)", name, len(opts), len(msg))

		n = allocated(func() { _, err = Read(d, bad) })
		require.ErrorIs(t, err, ErrBadFrame, name)
		assert.Contains(t, err.Error(), fmt.Sprintf("params.options.%d.optionId is a JSON number, not a string", len(opts)), name)
		assert.LessOrEqual(t, n, uint64(bound), "%s: bytes allocated to refuse a frame of %d options (%d bytes)", name, len(opts)+1, len(bad))
	}
}

// askOptionsSeeds are options values (and permission ask params) of
// every shape encoding/json reads its own way.
var askOptionsSeeds = []string{
	`null`, `[]`, `{}`, `"x"`, `5`, `true`, `[null]`, `[1]`, `["r"]`, `[[]]`, `[{}]`,
	`[{"optionId":"a","kind":"reject_once"},{"optionId":"b","kind":"allow_once"},{"optionId":"c","kind":"reject_always"}]`,
	`[{"OPTIONID":"a","Kind":"reject_once"},{"optionid":"b","KIND":"rejectx"},{"optıonId":"c","kınd":"reject"}]`,
	`[{"optionId":"a","optionId":"b","kind":"reject_once","kind":null}]`,
	`[{"optionId":"a","kind":"reject_once","optionId":null}]`,
	`[{"kind":"reject_once"},{"optionId":null,"kind":"reject_once"}]`,
	`[{"optionId":5,"kind":"reject_once"}]`,
	`[{"optionId":"a","kind":["reject"]}]`,
	`[{"optionId":"a","kind":"allow"},{"optionId":{},"kind":7},3]`,
	`[{"optionId":"\u0061","kind":"\u0072eject_once"},{"optionId":"a","kind":"reject_always"}]`,
	"[{\"optionId\":\"a\xff\",\"kind\":\"reject\xff\"},{\"optionId\":\"a\\ufffd\",\"kind\":\"reject_once\"}]",
	`[{"optionId":"a\ud800","kind":"reject_once"},{"optionId":"a\udfff","kind":"reject_once"}]`,
	`[{"optionId":"x","kind":"reJect_once"},{"optionId":"y","kind":" reject"}]`,
	` [ {"optionId" : "a" , "kind" : "reject_once" } , null , {"optionId":"b","kind":"reject_once"} ] `,
	`{"toolCall":{"toolCallId":5},"options":[{"optionId":5}]}`,
	`{"options":[{"optionId":5}],"toolCall":{"toolCallId":5}}`,
	`{"toolCall":"x","options":"y"}`,
	`{"OPTIONS":[1],"TOOLCALL":{"TOOLCALLID":true}}`,
	`{"options":[],"options":{}}`,
	`{"toolCall":{"toolCallId":"a","toolCallId":[]}}`,
	`{"toolCall":null,"options":null}`,
}

func init() {
	// More reject options than an ask reads, with duplicates on either
	// side of the bound.
	var many []string
	for i := range 40 {
		many = append(many, fmt.Sprintf(`{"optionId":"r%d","kind":"reject_once"}`, i%20))
		if i%7 == 0 {
			many = append(many, `{"optionId":"r0","kind":"reject_always"}`, `{"optionId":"r19","kind":"reject_always"}`)
		}
	}
	askOptionsSeeds = append(askOptionsSeeds, "["+strings.Join(many, ",")+"]")
}

// encodingJSONAsk is what the reading of an ask's options was when it
// decoded them into a list with encoding/json: the reject optionIds, in
// order, and the type error of params when there is one. The reject ids
// are then bounded as askOptions bounds them.
func encodingJSONAsk(params []byte) (reject []string, unread int, typeErr string) {
	var p struct {
		ToolCall struct {
			ToolCallID string `json:"toolCallId"`
		} `json:"toolCall"`
		Options []struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		} `json:"options"`
	}
	var te *json.UnmarshalTypeError
	if errors.As(json.Unmarshal(params, &p), &te) {
		typeErr = typeProblem(te, "params")
	}
	for _, o := range p.Options {
		switch {
		case !strings.HasPrefix(o.Kind, "reject"), slices.Contains(reject, o.OptionID):
		case len(reject) == MaxAskRejects:
			unread++
		default:
			reject = append(reject, o.OptionID)
		}
	}
	return reject, unread, typeErr
}

// checkAskOptions holds askOptions and strictAsk to encodingJSONAsk on b,
// read as a params and, when it is an array, as the options of one, and
// askOptions' fast decode to its UnmarshalJSON.
func checkAskOptions(t *testing.T, b []byte) {
	checkFastValue[askOptions](t, b)
	if !json.Valid(b) || isNull(b) {
		return
	}
	params := b
	if v := strings.TrimSpace(string(b)); v != "" && v[0] != '{' {
		params = []byte(`{"options":` + string(b) + `}`)
	}
	reject, unread, typeErr := encodingJSONAsk(params)
	got := ""
	if te := strictAsk(params); te != nil {
		got = typeProblem(te, "params")
	}
	require.Equal(t, typeErr, got, "the type error of %s", params)
	repeated := 0
	jsonlit.EachMember(params, func(key string, _ []byte) {
		if key == "OPTIONS" {
			repeated++
		}
	})
	if typeErr != "" || repeated > 1 {
		return // the frame is refused; encoding/json merges a repeated options (see askOptions)
	}
	var p struct {
		Options askOptions `json:"options"`
	}
	require.NoError(t, json.Unmarshal(params, &p))
	assert.Equal(t, reject, p.Options.reject, "the reject options of %s", params)
	assert.Equal(t, unread, p.Options.unread, "the reject options not read of %s", params)
	assert.Nil(t, p.Options.bad)
}

// TestAskOptionsFastIsUnmarshalJSON holds the fast decoder's reading of
// options to UnmarshalJSON's on the seeds and on tricky values beside
// them (whitespace, escapes, repeated members, nested values, every JSON
// type where an option or a member is).
func TestAskOptionsFastIsUnmarshalJSON(t *testing.T) {
	cases := append(slices.Clip(askOptionsSeeds),
		` [ ] `, `[ null , 1 , "x" , true , [ ] , { } ]`,
		`[{"optionId":"a","kind":"reject_once","extra":{"kind":"allow","optionId":"z"}}]`,
		`[{"kind":"reject_once","optionId":"a","nested":[{"kind":"reject"}]},{"optionId":"a","kind":"reject_always"}]`,
		`[{"optionId":"a","kind":"reject_once","optionId":"b"},{"kind":"reject_once","kind":"allow_once","optionId":"c"}]`,
		`[{"optionId":"a","kind":true},{"optionId":false,"kind":"reject_once"},{"optionId":[1],"kind":{}}]`,
		`[1,{"optionId":2,"kind":3}]`, `{"optionId":"a"}`, `-1.5e3`, `false`,
		`[{"\u006fptionId":"esc","KIND":"reject_once"},{"option\u0049d":"x","k\u0069nd":"reject"}]`,
		`[{"optionId":"a","\u212aind":"reject_once"},{"optionId":"b","Kind":"reject_once"}]`,
		`[{"optionId":"\"q\"","kind":"reject\u005fonce"},{"optionId":"\"q\"","kind":"reject_always"}]`,
		`[{"optionId":"a","kind":"reject_once"},]`, `[{"optionId":"a","kind":"reject_once"}`,
		`[{"optionId":"a" "kind":"reject_once"}]`, `[{"optionId":"\q","kind":"reject_once"}]`,
		`[{"optionId":"a","kind":"reject_once",}]`, `[{"optionId":}]`, `[nul]`,
		"[{\"optionId\":\"a\x01\",\"kind\":\"reject_once\"}]", "[{\"optionId\":\"a\xff\",\"kind\":\"reject_once\"},{\"optionId\":\"a\\ufffd\",\"kind\":\"reject_once\"}]",
	)
	fast := 0
	for _, c := range cases {
		if checkFastValue[askOptions](t, []byte(c)) {
			fast++
		}
	}
	require.Greater(t, fast, len(askOptionsSeeds))
}

// TestAskOptionsAreEncodingJSON holds the bounded reading of an ask's
// options to what decoding them into a list gave, on the seeds and on
// every permission ask of the recordings.
func TestAskOptionsAreEncodingJSON(t *testing.T) {
	for _, s := range askOptionsSeeds {
		checkAskOptions(t, []byte(s))
	}
	asks := 0
	for _, m := range recordingFrames(t, 16<<20, false) {
		var env struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(m, &env) == nil && env.Method == "session/request_permission" {
			checkAskOptions(t, env.Params)
			asks++
		}
	}
	t.Logf("%d recorded permission asks", asks)
	require.NotZero(t, asks)
}

// FuzzAskOptions looks for options (or params) that the bounded reading
// reads otherwise than a list would be.
func FuzzAskOptions(f *testing.F) {
	for _, s := range askOptionsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkAskOptions(t, b)
	})
}
