package dialect

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
	"github.com/stretchr/testify/require"
)

// readBoth reads msg with d twice, with the one-pass decode and with
// encoding/json alone, and fails when the frames or errors differ.
func readBoth(t *testing.T, d Dialect, msg []byte) {
	t.Helper()
	got, gotErr := Read(d, msg)
	jsonlit.SetEncodingJSONOnly(true)
	want, wantErr := Read(d, msg)
	jsonlit.SetEncodingJSONOnly(false)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%s: %q\none pass: error %v\nencoding/json: error %v", d.Info().Name, msg, gotErr, wantErr)
	}
	if err := uncheck(got.Observations); err != nil {
		t.Fatalf("%s: %q\n%v", d.Info().Name, msg, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: %q\none pass:      %+v\nencoding/json: %+v", d.Info().Name, msg, got, want)
	}
}

// uncheck returns an error when a text of obs is marked Valid (checked
// by the reader, so accum will not check it) but is not valid UTF-8, and
// clears the marks, which only the elided decode sets, so that frames
// read with and without it compare equal.
func uncheck(obs []accum.Observation) error {
	var err error
	for i := range obs {
		for j := range obs[i].Texts {
			x := &obs[i].Texts[j]
			if x.Valid && (x.Bytes != nil || !utf8.ValidString(x.Text)) && err == nil {
				err = fmt.Errorf("text %q is marked valid UTF-8 and is not", x.Text)
			}
			x.Valid = false
		}
	}
	return err
}

// decodeSeeds are messages where encoding/json's leniency shows: keys in
// other cases or escaped, duplicate keys, invalid UTF-8, lone surrogates,
// values of other types, nulls, content that is an object, trailing
// bytes.
var decodeSeeds = []string{
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call","TOOLCALLID":"a","Kind":"execute","title":"ls","rawInput":{"command":"ls"}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call","\u0074oolCallId":"a","toolCallId":"b","kind":"execute","kind":"read"}}}`,
	"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"a\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"\xff\xfe ok \\ud800 x\"}}]}}}",
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":7,"status":["x"],"content":null,"rawOutput":"text","rawInput":[1]}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed","_meta":{"terminal_exit":{"exit_code":"3"},"terminal_output":{"data":7}}}}} `,
	`{"jsonrpc":"2.0","method":"session/update","params":null}`,
	`{"jsonrpc":2,"method":"session/update","params":{}}`,
	`{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"reject"}}}x`,
	`{"jsonrpc":"2.0","id":"r1","method":"session/request_permission","params":{"toolCall":{"toolCallId":5},"options":[{"optionId":"o","kind":"reject_once"}]}}`,
	`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":["/x"]}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","content":[{"type":"content","content":{"type":"text","text":"a"}},{"type":"terminal","terminalId":"t"},7]}}}`,
	`[1,2]`, `"x"`, `{"a":1e999}`, `{"method":"session/update","params":{"update":{"toolCallId":"a","sessionUpdate":"tool_call","title":"\u00e9\ud83d\ude00"}}}`,
}

// recordingFiles returns the recordings of test/testdata/recordings, and
// of its agents/ when agents says so. It fails tb when either holds none:
// a test over them would pass on none.
func recordingFiles(tb testing.TB, agents bool) []string {
	files, _ := filepath.Glob("../../test/testdata/recordings/*.ndjson")
	require.NotEmpty(tb, files, "no recordings: a test over them would pass on none")
	if agents {
		more, _ := filepath.Glob("../../test/testdata/recordings/agents/*.ndjson")
		require.NotEmpty(tb, more, "no agent recordings: a test over them would pass on none")
		files = append(files, more...)
	}
	return files
}

// recordingFrames returns the msg of every line of the recordings
// (recordingFiles) of at most max bytes, as sent.
func recordingFrames(tb testing.TB, max int, agents bool) [][]byte {
	var out [][]byte
	for _, file := range recordingFiles(tb, agents) {
		if !walkedUnderRace(file) {
			continue
		}
		fh, err := os.Open(file)
		require.NoError(tb, err)
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var line struct {
				Msg json.RawMessage `json:"msg"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && len(line.Msg) > 0 && len(line.Msg) <= max {
				out = append(out, []byte(line.Msg))
			}
		}
		require.NoError(tb, sc.Err(), file)
		fh.Close()
	}
	return out
}

// walkedUnderRace says whether the tests that hold a reading to another
// on every recorded frame walk the recording at path: always, but under
// the race detector (raceDetector) only a fixed eighth of the real-agent
// recordings (test/testdata/recordings/agents), chosen by name. Those
// walks run on one goroutine, so the detector finds nothing in them.
// On every recording they passed go test's 10-minute limit under it in
// CI; on a quarter the package took 400 s on a quiet 2-core machine and
// passed the limit on a busy one (three walks of a quarter, 430 s of
// it). test/run.sh runs this package's tests again without the
// detector, on every recording.
func walkedUnderRace(path string) bool {
	if !raceDetector || filepath.Base(filepath.Dir(path)) != "agents" {
		return true
	}
	name, h := filepath.Base(path), uint32(2166136261)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint32(name[i])) * 16777619 // FNV-1a
	}
	return h%8 == 0
}

// seedFrames adds to f's corpus the recorded frames of up to 4 KiB, then
// seeds.
func seedFrames(f *testing.F, seeds ...string) {
	for _, m := range recordingFrames(f, 4096, false) {
		f.Add(m)
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
}

// TestOnePassDecodeIsEncodingJSON holds the one-pass decode to what
// encoding/json gives on every frame of the recordings, with every
// dialect, and on the seeds.
func TestOnePassDecodeIsEncodingJSON(t *testing.T) {
	msgs := recordingFrames(t, 16<<20, false)
	for _, s := range decodeSeeds {
		msgs = append(msgs, []byte(s))
	}
	for _, d := range All() {
		for _, m := range msgs {
			readBoth(t, d, m)
		}
	}
}

// FuzzOnePassDecode looks for a message that the one-pass decode reads
// differently from encoding/json.
func FuzzOnePassDecode(f *testing.F) {
	seedFrames(f, decodeSeeds...)
	dialects := All()
	f.Fuzz(func(t *testing.T, msg []byte) {
		for _, d := range dialects {
			readBoth(t, d, msg)
		}
	})
}
