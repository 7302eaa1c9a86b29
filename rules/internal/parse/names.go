package parse

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Describe names the JSON type of v for messages: "a string", "a map", "null".
func Describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	}
	return fmt.Sprintf("%T", v)
}

// DidYouMean returns ` (did you mean 'x'?)` for the candidate closest to name, or "" when
// none is close enough to be an obvious typo.
func DidYouMean(name string, candidates []string) string {
	best, bestDist, bestRaw := "", 0, 0
	for _, c := range candidates {
		if c == name {
			continue
		}
		lname, lc := strings.ToLower(name), strings.ToLower(c)
		raw := EditDistance(lname, lc)
		d := raw
		if min(len(lname), len(lc)) >= 3 && (strings.HasPrefix(lc, lname) || strings.HasPrefix(lname, lc)) {
			// A shortened or extended name: deploy for deployment.
			d = min(d, 1)
		}
		// Between names as near, the one spelt nearest wins: imagePullPolicy, not
		// image, for imagePullPolice.
		if best == "" || d < bestDist || (d == bestDist && (raw < bestRaw || raw == bestRaw && c < best)) {
			best, bestDist, bestRaw = c, d, raw
		}
	}
	limit := 2
	if n := utf8.RuneCountInString(name); n <= 4 {
		limit = 1
	}
	if best == "" || bestDist > limit {
		return ""
	}
	return fmt.Sprintf(" (did you mean '%s'?)", best)
}

// EditDistance is the optimal string alignment distance: insertions, deletions,
// substitutions and transpositions of adjacent characters each cost one.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rolling rows: two back, previous, current.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
