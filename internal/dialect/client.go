package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// This file is the client's side of a session: the `clientCapabilities`
// of the client's `initialize` request. Some agents send another wire to a
// client that declares an extension there (claude-agent-acp to a client
// that declares JetBrains AIR's `_meta.jetbrains.air`: made-up exit codes,
// no terminal content items). The core keeps what the client declared,
// without reading it, and binds the session's dialect to it as it binds it
// to the agent's build (BindPeers); a dialect that reads such a wire
// implements clientBound.

// MaxClientBytes bounds the clientCapabilities kept from a client, as
// compact JSON. A client that declares more is read as one that declared
// nothing (ParseClient says so).
const MaxClientBytes = 8 << 10

// ErrClientTooLarge is the error of ParseClient for capabilities over
// MaxClientBytes.
var ErrClientTooLarge = errors.New("clientCapabilities over the limit")

// Client is what a client declared of itself in its `initialize` request:
// its `clientCapabilities`, kept as compact JSON. The zero Client declared
// nothing (no initialize request seen, or one without capabilities).
// Clients are comparable with ==.
type Client struct {
	caps string // compact JSON of an object; "" for none
}

// ParseClient reads the `clientCapabilities` of an initialize request
// (raw JSON). Absent or null capabilities are the zero Client and no
// error; capabilities that are not a JSON object, or that are over
// MaxClientBytes once compact, are the zero Client and an error that names
// the problem.
func ParseClient(raw []byte) (Client, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || isNull(raw) {
		return Client{}, nil
	}
	if raw[0] != '{' {
		return Client{}, errors.New("clientCapabilities is not a JSON object; the session reads as if the client declared none")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return Client{}, fmt.Errorf("clientCapabilities: %v; the session reads as if the client declared none", err)
	}
	if b.Len() > MaxClientBytes {
		return Client{}, fmt.Errorf("%w: %d bytes of clientCapabilities, over the %d-byte limit; the session reads as if the client declared none", ErrClientTooLarge, b.Len(), MaxClientBytes)
	}
	return Client{caps: b.String()}, nil
}

// Raw is the capabilities as compact JSON ("" when the client declared
// none). ParseClient(Raw()) gives the same Client.
func (c Client) Raw() string { return c.caps }

// object says whether the capabilities hold a JSON object at path (keys
// from the top).
func (c Client) object(path ...string) bool {
	if c.caps == "" {
		return false
	}
	if last := path[len(path)-1]; !strings.Contains(c.caps, `\`) && !strings.Contains(c.caps, `"`+last+`"`) {
		// Without an escape, every name is spelled in the text as it
		// reads: the last one is not there. A dialect asks each time a
		// session binds it, and decoding the capabilities was 0.4% of
		// the server's samples on a load of short sessions.
		return false
	}
	v := json.RawMessage(c.caps)
	for _, k := range path {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(v, &m); err != nil {
			return false
		}
		var ok bool
		if v, ok = m[k]; !ok {
			return false
		}
	}
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '{'
}

// clientBound is implemented by a dialect whose reading depends on what
// the client declared as well as on the agent's build. forPeers returns
// the dialect value that reads frames of build v sent to client c (with
// the same Info); like versioned's forVersion, it is called once per
// session and whenever the session learns either, never per frame. It
// must accept an unknown v and the zero Client.
type clientBound interface {
	forPeers(v Version, c Client) Dialect
}
