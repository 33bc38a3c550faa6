package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// promSample is one sample of the Prometheus text exposition format.
type promSample struct {
	labels map[string]string
	value  float64
}

// scrapeFamilies reads every sample of the named metrics from the
// Prometheus text exposition at url. A name with no samples is simply
// absent from the result: a labelled metric nothing has touched yet
// exports nothing.
func scrapeFamilies(ctx context.Context, url string, names ...string) (map[string][]promSample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: status %d", url, resp.StatusCode)
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	out := make(map[string][]promSample, len(names))
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name := line[:strings.IndexAny(line+" ", "{ ")]
		if !want[name] {
			continue
		}
		s, err := parseSample(line[len(name):])
		if err != nil {
			return nil, fmt.Errorf("scrape %s: %s: %w", url, name, err)
		}
		out[name] = append(out[name], s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return out, nil
}

// scrapeMetrics reads the named unlabelled samples from a Prometheus text
// exposition at url. A name that is absent is an error.
func scrapeMetrics(ctx context.Context, url string, names ...string) (map[string]float64, error) {
	fams, err := scrapeFamilies(ctx, url, names...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(names))
	for _, n := range names {
		found := false
		for _, s := range fams[n] {
			if len(s.labels) == 0 {
				out[n], found = s.value, true
			}
		}
		if !found {
			return nil, fmt.Errorf("scrape %s: no sample named %s", url, n)
		}
	}
	return out, nil
}

// parseSample reads what follows a metric name: optional {labels}, the
// value, and an optional timestamp, which is ignored.
func parseSample(rest string) (promSample, error) {
	s := promSample{}
	if strings.HasPrefix(rest, "{") {
		labels, after, err := parseLabels(rest[1:])
		if err != nil {
			return s, err
		}
		s.labels, rest = labels, after
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 || len(fields) > 2 {
		return s, fmt.Errorf("malformed sample %q", rest)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("value: %w", err)
	}
	s.value = v
	return s, nil
}

// parseLabels reads `name="value",...}` and returns the labels and what
// follows the closing brace. Values may hold the escapes \\, \" and \n.
func parseLabels(in string) (map[string]string, string, error) {
	labels := map[string]string{}
	for {
		in = strings.TrimLeft(in, " ")
		if strings.HasPrefix(in, "}") {
			return labels, in[1:], nil
		}
		eq := strings.IndexByte(in, '=')
		if eq <= 0 || eq+1 >= len(in) || in[eq+1] != '"' {
			return nil, "", errors.New("malformed label")
		}
		name := strings.TrimSpace(in[:eq])
		var val strings.Builder
		i := eq + 2
		for ; i < len(in) && in[i] != '"'; i++ {
			c := in[i]
			if c == '\\' && i+1 < len(in) {
				i++
				switch in[i] {
				case 'n':
					c = '\n'
				default:
					c = in[i]
				}
			}
			val.WriteByte(c)
		}
		if i >= len(in) {
			return nil, "", errors.New("unterminated label value")
		}
		labels[name] = val.String()
		in = strings.TrimPrefix(in[i+1:], ",")
	}
}
