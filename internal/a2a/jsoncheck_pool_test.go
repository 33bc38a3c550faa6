package a2a

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestCheckJSONReusesCheckers checks that a checker taken from the pool
// carries nothing over from its last document: names seen there are not
// duplicates here, a name set built for a wide object is gone, and
// documents checked at the same time do not share one.
func TestCheckJSONReusesCheckers(t *testing.T) {
	wide := func(dup bool) string {
		var b strings.Builder
		b.WriteString(`{"o":{`)
		for i := range 3 * smallObject {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		if dup {
			b.WriteString(`"k0":0,`)
		}
		b.WriteString(`"end":true},"list":[` + strings.Repeat(`{"a":1,"b":2},`, 3*pooledKeys) + `{}]}`)
		return b.String()
	}
	docs := []struct {
		doc string
		ok  bool
	}{
		{wide(false), true},
		{`{"k0":1,"k1":2,"o":{"k0":1}}`, true},
		{wide(true), false},
		{`{"k0":1,"k0":2}`, false},
		{`{"end":true,"o":{"end":true}}`, true},
		{`{"a":[1,{"b":{"c":[[[{"d":1,"d":2}]]]}}]}`, false},
		{`{"a":[1,{"b":{"c":[[[{"d":1,"e":2}]]]}}]}`, true},
		{`{"unterminated":`, false},
	}
	for range 3 {
		for _, d := range docs {
			if err := checkJSON([]byte(d.doc)); (err == nil) != d.ok {
				t.Fatalf("checkJSON(%.60s...) = %v, want ok=%v", d.doc, err, d.ok)
			}
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(docs))
	for range 8 {
		wg.Go(func() {
			for range 50 {
				for _, d := range docs {
					if err := checkJSON([]byte(d.doc)); (err == nil) != d.ok {
						errs <- fmt.Errorf("checkJSON(%.60s...) = %v, want ok=%v", d.doc, err, d.ok)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
