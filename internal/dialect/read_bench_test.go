package dialect

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/benchcpu"
	"github.com/go-json-experiment/json/jsontext"
)

// benchFrames returns the agent->client frames of a recording and the
// dialect its initialize result names.
func benchFrames(b *testing.B, file string) (Dialect, [][]byte, int64) {
	b.Helper()
	fh, err := os.Open(file)
	if err != nil {
		b.Fatal(err)
	}
	defer fh.Close()
	d := Generic()
	var frames [][]byte
	var size int64
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line struct {
			Dir string          `json:"dir"`
			Msg json.RawMessage `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			b.Fatal(err)
		}
		if line.Dir != "agent->client" {
			continue
		}
		fr, err := Read(d, line.Msg)
		if err == nil && fr.AgentName != "" {
			d = Detect(fr.AgentName)
		}
		frames = append(frames, line.Msg)
		size += int64(len(line.Msg))
	}
	return d, frames, size
}

// BenchmarkRead holds the cost of reading a recording's frames with its
// dialect (one typed pass) against encoding/json's generic decode of the
// same frames into map[string]any, which is what a client that reads
// vendor fields by hand would do before it even starts to interpret them.
// One op reads every agent->client frame of the recording once.
// encoding-json is the same read with encoding/json alone (its validation
// scan, then the decode); jsontext-scan only validates the frames with the
// one-pass decoder's tokenizer, the floor of any decode built on it.
func BenchmarkRead(b *testing.B) {
	files, _ := filepath.Glob("../../test/testdata/recordings/*.ndjson")
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".ndjson")
		d, frames, size := benchFrames(b, file)
		b.Run(name+"/dialect="+d.Info().Name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			cpu := benchcpu.Now()
			for b.Loop() {
				for _, f := range frames {
					if _, err := Read(d, f); err != nil {
						b.Fatal(err)
					}
				}
			}
			benchcpu.Report(b, cpu)
		})
		b.Run(name+"/dialect="+d.Info().Name+"/encoding-json", func(b *testing.B) {
			legacyDecode = true
			defer func() { legacyDecode = false }()
			b.SetBytes(size)
			b.ReportAllocs()
			cpu := benchcpu.Now()
			for b.Loop() {
				for _, f := range frames {
					if _, err := Read(d, f); err != nil {
						b.Fatal(err)
					}
				}
			}
			benchcpu.Report(b, cpu)
		})
		b.Run(name+"/jsontext-scan", func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			cpu := benchcpu.Now()
			for b.Loop() {
				for _, f := range frames {
					if !jsontext.Value(f).IsValid() {
						b.Fatal("invalid frame")
					}
				}
			}
			benchcpu.Report(b, cpu)
		})
		b.Run(name+"/generic-map", func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			cpu := benchcpu.Now()
			for b.Loop() {
				for _, f := range frames {
					var v map[string]any
					if err := json.Unmarshal(f, &v); err != nil {
						b.Fatal(err)
					}
				}
			}
			benchcpu.Report(b, cpu)
		})
	}
}
