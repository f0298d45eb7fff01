// The byte scan under the wire format's JSON strings, with SSE2 where the target has it: which bytes at the start of
// a buffer a JSON string holds as they are. Swift's SIMD types compile to one lane at a time here (checked with
// swiftc 6.3 at -O and -Osize), so the 16-byte loop is written in C; elsewhere the same test runs eight bytes at a
// time in a 64-bit word. The 16-byte loop is inline, so the Swift callers (UplinkWire's JSONScanner and JSONRawWriter)
// do not pay a call for it; the eight-byte and one-byte rest is in json_bytes.c.
#ifndef UPLINK_CJSONBYTES_H
#define UPLINK_CJSONBYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/// `uplink_json_plain_prefix` from `index` on, eight bytes at a time and then one at a time: what the 16-byte loop
/// leaves, and the whole scan where there is no SSE2. Out of line, so that the inlined part stays small.
size_t uplink_json_plain_tail(const uint8_t *bytes, size_t index, size_t count);

/// The scan both functions below are: the plain bytes at the start of `start`, copied to `to` as they are checked
/// when `to` is not NULL (16 at a time, so up to 15 bytes after them may be written too). Each caller passes a
/// constant `to`, so the copy or its absence is decided when this is inlined.
static inline size_t uplink_json_scan_plain(void *to, const void *start, size_t count) {
    uint8_t *destination = (uint8_t *)to;
    const uint8_t *bytes = (const uint8_t *)start;
    size_t index = 0;
#if defined(__SSE2__)
    // As signed bytes, both control characters and non-ASCII bytes are below 0x20.
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    while (index + 16 <= count) {
        __m128i block = _mm_loadu_si128((const __m128i *)(bytes + index));
        if (destination != NULL) { _mm_storeu_si128((__m128i *)(destination + index), block); }
        __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(block, quote), _mm_cmpeq_epi8(block, backslash)),
                                       _mm_cmplt_epi8(block, space));
        int mask = _mm_movemask_epi8(special);
        if (mask != 0) { return index + (size_t)__builtin_ctz((unsigned)mask); }
        index += 16;
    }
#endif
    size_t plain = uplink_json_plain_tail(bytes, index, count);
    if (destination != NULL) { memcpy(destination + index, bytes + index, plain - index); }
    return plain;
}

/// How many bytes at the start of `start` (`count` of them) need no attention in a JSON string: the index of the
/// first `"`, `\`, control character (below 0x20) or non-ASCII byte (0x80 and above), or `count` when there is none.
static inline size_t uplink_json_plain_prefix(const void *start, size_t count) {
    return uplink_json_scan_plain(NULL, start, count);
}

/// `uplink_json_plain_prefix`, copying those bytes to `to` as it goes. It may also write up to 15 bytes after them
/// (never beyond `to + count`): the caller's room must hold `count` bytes, and what follows the plain prefix is the
/// caller's to overwrite.
static inline size_t uplink_json_copy_plain_prefix(void *to, const void *start, size_t count) {
    return uplink_json_scan_plain(to, start, count);
}

#endif
