// Package replay plays recorded ACP wire logs through a NormalizerService
// client and folds the revisions it gets back the way a client would.
package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
)

// Line is one message of a recording.
type Line struct {
	// Number is the 1-based line number in the file.
	Number int
	// Dir is the direction, when the recording says it.
	Dir pb.Direction
	// Msg is the JSON-RPC message, as recorded.
	Msg []byte
}

type wrapped struct {
	Dir *string         `json:"dir"`
	Msg json.RawMessage `json:"msg"`
}

// maxLine bounds one recorded line.
const maxLine = 64 << 20

// Read reads a newline-delimited recording. Each line is either a bare
// JSON-RPC message or {"dir": "agent->client"|"client->agent", "t_ms": N,
// "msg": {...}}. Blank lines are skipped. A line that is not JSON is kept as
// it is, so the service can say what is wrong with it.
func Read(r io.Reader) ([]Line, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), maxLine)
	var lines []Line
	for n := 1; sc.Scan(); n++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		l := Line{Number: n, Msg: append([]byte(nil), raw...)}
		var w wrapped
		if json.Unmarshal(raw, &w) == nil && w.Dir != nil && len(w.Msg) > 0 {
			l.Msg = append([]byte(nil), w.Msg...)
			switch *w.Dir {
			case "agent->client":
				l.Dir = pb.Direction_DIRECTION_AGENT_TO_CLIENT
			case "client->agent":
				l.Dir = pb.Direction_DIRECTION_CLIENT_TO_AGENT
			default:
				return nil, fmt.Errorf("line %d: unknown dir %q (want agent->client or client->agent)", n, *w.Dir)
			}
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading recording: %w", err)
	}
	return lines, nil
}

// ReadFile reads the recording in file; a parse error names the file.
func ReadFile(file string) ([]Line, error) {
	fh, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	lines, err := Read(fh)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return lines, nil
}
