// Package chaos is the chaos suite of acpnorm (its tests only): three real
// acpnormd processes on a Sentinel Redis and on a Redis Cluster, several
// recorded sessions replayed at once through the Go session client, and a
// fault injector on a seeded random schedule (acpnormd SIGKILLed and
// restarted or paused, the Redis master SIGKILLed, a replica paused so
// that it falls behind). The checker compares every call's folded final
// with one in-process run's, watches every revision on the wire, and
// counts the losses the store caused: those reported as DATA_LOSS and
// repaired, and those not detected (which must be none).
//
//	go test ./test/chaos                          the short run (CI)
//	ACPNORM_CHAOS_LONG=1 go test -timeout 30m -v ./test/chaos
//	                                              the long run (about 10 min)
//	ACPNORM_CHAOS_SEED=N                          repeat a run's schedule
//	ACPNORM_CHAOS_DURATION=2m                     traffic per store
//	ACPNORM_CHAOS_CLUSTER_WAIT=0                  the Cluster's --store-wait-replicas
//	                                              (0 unless given)
//	ACPNORM_CHAOS_LOGDIR=/tmp/x                   keep every acpnormd's stderr there
//
// See docs/scaling.md for what it checks and the figures of a long run.
package chaos
