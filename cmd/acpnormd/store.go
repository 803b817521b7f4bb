package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/acpnorm/acpnorm/store"
	"github.com/acpnorm/acpnorm/store/redisstore"
)

// checkStore checks the form of a --store value: empty or "memory", or a
// redis:// or rediss:// URL.
func checkStore(spec string) error {
	s := strings.TrimSpace(spec)
	if s == "" || strings.EqualFold(s, "memory") {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("--store: not a URL (want empty, memory, or redis://host:port/db)")
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return fmt.Errorf("--store %q: unknown scheme %q (want empty, memory, or a redis:// or rediss:// URL)", u.Redacted(), u.Scheme)
	}
	return nil
}

// openStore opens the store a checked --store value names; nil means this
// process's memory.
func openStore(spec string) (store.Store, error) {
	s := strings.TrimSpace(spec)
	if s == "" || strings.EqualFold(s, "memory") {
		return nil, nil
	}
	st, err := redisstore.Open(s)
	if err != nil {
		return nil, fmt.Errorf("--store: %w", err)
	}
	return st, nil
}
