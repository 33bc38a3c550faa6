package bench

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketBounds(t *testing.T) {
	tests := []struct {
		name string
		v    uint64
	}{
		{"zero", 0},
		{"last exact", subCount - 1},
		{"first shifted", subCount},
		{"odd shifted", subCount*3 + 1},
		{"one millisecond", uint64(time.Millisecond)},
		{"one minute", uint64(time.Minute)},
		{"largest", ^uint64(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := bucketOf(tt.v)
			if i < 0 || i >= numBuckets {
				t.Fatalf("bucketOf(%d) = %d, outside [0,%d)", tt.v, i, numBuckets)
			}
			hi := bucketHigh(i)
			if hi < tt.v {
				t.Fatalf("bucket %d ends at %d, below the value %d", i, hi, tt.v)
			}
			if i > 0 && bucketHigh(i-1) >= tt.v {
				t.Fatalf("value %d also fits the previous bucket (ends %d)", tt.v, bucketHigh(i-1))
			}
			if err := float64(hi-tt.v) / float64(max(tt.v, 1)); err > 1.0/128 {
				t.Fatalf("relative error %.4f for %d", err, tt.v)
			}
		})
	}
}

func TestQuantileMatchesSortedSamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		gen  func() time.Duration
	}{
		{"uniform micro", func() time.Duration { return time.Duration(rng.IntN(1000)) * time.Microsecond }},
		{"exponential", func() time.Duration { return time.Duration(rng.ExpFloat64() * float64(2*time.Millisecond)) }},
		{"bimodal", func() time.Duration {
			if rng.IntN(100) == 0 {
				return 250*time.Millisecond + time.Duration(rng.IntN(1000))*time.Microsecond
			}
			return time.Duration(500+rng.IntN(200)) * time.Microsecond
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHistogram()
			samples := make([]time.Duration, 20000)
			for i := range samples {
				samples[i] = tt.gen()
				h.Record(samples[i])
			}
			slices.Sort(samples)
			for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
				want := samples[max(int(q*float64(len(samples))+0.999999)-1, 0)]
				got := h.Quantile(q)
				if got < want || float64(got-want) > float64(want)/128+1 {
					t.Errorf("q%.3f = %v, sorted sample says %v", q, got, want)
				}
			}
			if h.Max() != samples[len(samples)-1] || h.Min() != samples[0] {
				t.Errorf("extremes %v..%v, want %v..%v", h.Min(), h.Max(), samples[0], samples[len(samples)-1])
			}
		})
	}
}

func TestMergeEqualsSingleHistogram(t *testing.T) {
	whole, a, b := NewHistogram(), NewHistogram(), NewHistogram()
	for i := range 5000 {
		d := time.Duration(i*i) * time.Nanosecond
		whole.Record(d)
		if i%2 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(b)
	if a.Count() != whole.Count() || a.Mean() != whole.Mean() || a.Max() != whole.Max() || a.Min() != whole.Min() {
		t.Fatalf("merged count/mean/max/min %d/%v/%v/%v, want %d/%v/%v/%v",
			a.Count(), a.Mean(), a.Max(), a.Min(), whole.Count(), whole.Mean(), whole.Max(), whole.Min())
	}
	for _, q := range []float64{0.5, 0.99} {
		if a.Quantile(q) != whole.Quantile(q) {
			t.Errorf("q%.2f merged %v, whole %v", q, a.Quantile(q), whole.Quantile(q))
		}
	}
}

func TestEmptyHistogram(t *testing.T) {
	h := NewHistogram()
	if h.Quantile(0.99) != 0 || h.Max() != 0 || h.Min() != 0 || h.Mean() != 0 {
		t.Fatal("an empty histogram must report zeros")
	}
	h.Merge(NewHistogram())
	if h.Count() != 0 || h.Min() != 0 {
		t.Fatal("merging empty histograms must stay empty")
	}
}
