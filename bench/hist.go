package bench

import (
	"math"
	"math/bits"
	"time"
)

// subBits sets the histogram's precision: every power-of-two range of
// values is split into 2^(subBits-1) equal buckets, so a recorded value is
// off by less than 1/128 (0.8%) of itself, at any magnitude.
const (
	subBits   = 8
	subCount  = 1 << subBits
	halfCount = subCount / 2
	// numBuckets covers every uint64: the exact values below subCount, then
	// halfCount buckets for each further bit of magnitude.
	numBuckets = subCount + (64-subBits)*halfCount
)

// Histogram records latencies in log-linear buckets, in the manner of an
// HDR histogram: constant memory, constant-time recording, and quantiles
// with a bounded relative error. It is not safe for concurrent use; give
// each worker its own and Merge them.
type Histogram struct {
	counts   []uint64
	total    uint64
	min, max uint64
	sum      float64
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{counts: make([]uint64, numBuckets), min: math.MaxUint64}
}

// bucketOf maps a value to its bucket index.
func bucketOf(v uint64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(v) - subBits
	top := v >> shift // subBits significant bits: [halfCount, subCount)
	return subCount + (shift-1)*halfCount + int(top-halfCount)
}

// bucketHigh is the largest value that falls into bucket i.
func bucketHigh(i int) uint64 {
	if i < subCount {
		return uint64(i)
	}
	shift := (i-subCount)/halfCount + 1
	top := uint64((i-subCount)%halfCount + halfCount)
	return (top+1)<<shift - 1
}

// Record adds one latency; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(max(d, 0))
	h.counts[bucketOf(v)]++
	h.total++
	h.sum += float64(v)
	h.min = min(h.min, v)
	h.max = max(h.max, v)
}

// Merge adds every sample of o to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.sum += o.sum
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// Count is the number of recorded samples.
func (h *Histogram) Count() uint64 { return h.total }

// Max is the largest recorded sample, exactly.
func (h *Histogram) Max() time.Duration {
	if h.total == 0 {
		return 0
	}
	return time.Duration(h.max)
}

// Min is the smallest recorded sample, exactly.
func (h *Histogram) Min() time.Duration {
	if h.total == 0 {
		return 0
	}
	return time.Duration(h.min)
}

// Mean is the arithmetic mean of the samples.
func (h *Histogram) Mean() time.Duration {
	if h.total == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.total))
}

// Quantile returns the value at or below which a fraction q (0..1) of the
// samples lie: the upper edge of the bucket holding the sample of that
// rank, never beyond the exact extremes.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := uint64(math.Ceil(q * float64(h.total)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := min(max(bucketHigh(i), h.min), h.max)
			return time.Duration(v)
		}
	}
	return time.Duration(h.max)
}
