// The out-of-line part of the scan (CJSONBytes.h).
#include "CJSONBytes.h"

/// The bits 0x80 of the bytes of `word` (eight bytes loaded little-endian) that are `"`, `\`, below 0x20 or above
/// 0x7F. Bytes above the first such byte may be flagged falsely (borrows), so only the lowest set bit is exact.
static inline uint64_t uplink_json_attention_bits(uint64_t word) {
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t quote = word ^ (ones * 0x22), backslash = word ^ (ones * 0x5C);
    uint64_t control = (word - ones * 0x20) & ~word;
    uint64_t has_quote = (quote - ones) & ~quote, has_backslash = (backslash - ones) & ~backslash;
    return (word | control | has_quote | has_backslash) & highs;
}

size_t uplink_json_plain_tail(const uint8_t *bytes, size_t index, size_t count) {
    while (index + 8 <= count) {
        uint64_t word;
        memcpy(&word, bytes + index, 8);
        uint64_t attention = uplink_json_attention_bits(word);
        if (attention != 0) { return index + ((size_t)__builtin_ctzll(attention) >> 3); }
        index += 8;
    }
    while (index < count) {
        uint8_t byte = bytes[index];
        if (byte < 0x20 || byte >= 0x80 || byte == '"' || byte == '\\') { return index; }
        index += 1;
    }
    return count;
}
