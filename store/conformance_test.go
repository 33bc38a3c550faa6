package store_test

import (
	"testing"

	"github.com/a2a-gateway/a2a-gateway/store/storetest"
)

func TestOwnershipConformance(t *testing.T) { conformance(t, storetest.RunOwnership) }
