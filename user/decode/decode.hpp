// Ring-buffer records -> typed events. The decoder distrusts its input: it
// checks the record's length, its ABI version and the size the kernel wrote
// for its type before copying it into an aligned struct.
#pragma once

#include "decode/event.hpp"
#include "facts/result.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shmbpf {

Result<Event> decode_event(const void *data, size_t len);

// decode_event into an event that is reused from record to record: its
// strings keep their buffers, so a steady stream of records allocates
// nothing. Every field is reset first. On failure (false) e is unspecified
// and *why, when given, says what was wrong.
bool decode_event_into(const void *data, size_t len, Event &e, std::string *why = nullptr);

// The size of a record of this type as the kernel writes it; 0 for a type
// the ABI does not have.
size_t record_size(uint8_t type);
// The least a record of this type can be: a file or path record may end
// early, after the last of its char arrays in use (shmbpf_events.h).
size_t record_min_size(uint8_t type);

// "name\0dir\0" (leaf first, as the kernel collects them) -> "/dir/name".
// reached_root false means the walk stopped early: the path is marked with
// a leading "..." instead of "/".
std::string join_components(const char *buf, size_t len, bool reached_root);
// The same into out (replacing its contents).
void join_components_into(std::string &out, const char *buf, size_t len, bool reached_root);

} // namespace shmbpf
