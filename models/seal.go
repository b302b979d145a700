package models

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// A model's metadata record is its JSON followed by a seal: a newline,
// "sha256:" and the lower-case hex sha256 of the JSON. json.Marshal never
// writes a newline, so a record with one must carry a valid seal; a
// record without one is a legacy record (written before seals), taken as
// it is and sealed when it is next written.
const sealTag = "\nsha256:"

// seal appends the seal of body.
func seal(body []byte) []byte {
	sum := sha256.Sum256(body)
	out := make([]byte, 0, len(body)+len(sealTag)+64)
	out = append(append(out, body...), sealTag...)
	return hex.AppendEncode(out, sum[:])
}

// unseal checks raw's seal and returns the JSON it covers; a legacy
// record must still be valid UTF-8 JSON.
func unseal(raw []byte) ([]byte, error) {
	i := bytes.IndexByte(raw, '\n')
	if i < 0 {
		if !utf8.Valid(raw) || !json.Valid(raw) {
			return nil, errors.New("unsealed record is not valid UTF-8 JSON (a damaged seal or a damaged legacy record)")
		}
		return raw, nil
	}
	body, tail := raw[:i], raw[i:]
	if !bytes.HasPrefix(tail, []byte(sealTag)) || len(tail) != len(sealTag)+64 {
		return nil, errors.New("the record's seal is damaged")
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != string(tail[len(sealTag):]) {
		return nil, errors.New("the record fails its sha256 seal (a bit changed on disk)")
	}
	return body, nil
}
