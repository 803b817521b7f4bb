package store_test

import (
	"testing"

	"github.com/acpnorm/acpnorm/store"
	"github.com/acpnorm/acpnorm/store/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return store.NewMemory() })
}
