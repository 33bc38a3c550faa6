package store_test

import (
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/store/storetest"
)

func TestOperatorConformance(t *testing.T) { conformance(t, storetest.RunOperator) }
