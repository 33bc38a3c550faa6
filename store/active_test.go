package store_test

import (
	"testing"

	"github.com/a2a-gateway/a2a-gateway/store/storetest"
)

func TestActiveTasksConformance(t *testing.T) { conformance(t, storetest.RunActiveTasks) }
