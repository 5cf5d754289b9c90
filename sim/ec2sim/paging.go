package ec2sim

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// page is the MaxResults/NextToken state of one Describe call.
type page struct {
	max   int // 0: no limit
	after int // resume after this position (sequence or index); -1 from the start
}

// readPage validates MaxResults (lo..hi, not combined with ids) and NextToken.
func readPage(f form, action string, lo, hi int, idsGiven bool, idsParam string) (page, *apiError) {
	p := page{after: -1}
	n, hasMax, err := f.intParam("MaxResults")
	if err != nil {
		return p, err
	}
	if hasMax && idsGiven {
		return p, newAPIError("InvalidParameterCombination",
			"The parameter %s cannot be used with the parameter maxResults", idsParam)
	}
	if hasMax && (n < lo || n > hi) {
		return p, errInvalidParameterValue("Value ( %d ) for parameter maxResults is invalid. "+
			"Expecting a value between %d and %d.", n, lo, hi)
	}
	p.max = n
	if tok := f.get("NextToken"); tok != "" {
		after, ok := decodeToken(action, tok)
		if !ok {
			return p, newAPIError("InvalidNextToken", "The specified token %s is invalid.", tok)
		}
		p.after = after
	}
	return p, nil
}

func encodeToken(action string, after int) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "ec2sim:%s:%d", action, after))
}

func decodeToken(action, tok string) (int, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, false
	}
	rest, ok := strings.CutPrefix(string(raw), "ec2sim:"+action+":")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}

// paginate cuts keys (ascending positions) into the page and the token of the
// next one ("" on the last page).
func paginate(action string, positions []int, p page) (from, to int, next string) {
	from = 0
	for from < len(positions) && positions[from] <= p.after {
		from++
	}
	to = len(positions)
	if p.max > 0 && from+p.max < to {
		to = from + p.max
		next = encodeToken(action, positions[to-1])
	}
	return from, to, next
}
