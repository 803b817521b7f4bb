package service

import "github.com/acpnorm/acpnorm/normalize"

// session returns what session id holds (zero when it is not held).
func (ss *sessions) session(id string) normalize.SessionStats {
	st, _ := ss.n.SessionStats(id)
	return st
}
