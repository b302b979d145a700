package models

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
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
func seal(body []byte) []byte { return Seal(nil, body) }

// unseal checks raw's seal and returns the JSON it covers; a legacy
// record must still be valid UTF-8 JSON.
func unseal(raw []byte) ([]byte, error) { return Unseal(nil, raw) }

// sealSum is the sha256 a seal carries: of body alone without a key (the
// registry's records), else of the key's length, the key and body, so
// that a record moved to another key (a bit flipped in the key) fails too.
func sealSum(key, body []byte) [sha256.Size]byte {
	if key == nil {
		return sha256.Sum256(body)
	}
	h := sha256.New()
	h.Write(binary.AppendUvarint(nil, uint64(len(key))))
	h.Write(key)
	h.Write(body)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// Seal is a JSON record (json.Marshal's output, which has no newline)
// followed by its seal, for a bbolt value stored under key (nil: the seal
// covers the record alone). The agent's database seals its records so.
func Seal(key, body []byte) []byte {
	sum := sealSum(key, body)
	out := make([]byte, 0, len(body)+len(sealTag)+64)
	out = append(append(out, body...), sealTag...)
	return hex.AppendEncode(out, sum[:])
}

// Unseal checks the seal of a record stored under key by Seal and returns
// the JSON it covers. A record without a seal (written before seals) is
// returned as it is if it is valid UTF-8 JSON: the caller tells the two
// apart by the length of body.
func Unseal(key, raw []byte) (body []byte, err error) {
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
	sum := sealSum(key, body)
	if hex.EncodeToString(sum[:]) != string(tail[len(sealTag):]) {
		return nil, errors.New("the record fails its sha256 seal (a bit changed on disk)")
	}
	return body, nil
}
