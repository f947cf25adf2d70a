// How `shmbpf top --server` and the daemon talk about a screen: the state
// the user chose goes to the daemon as a query string, and the frame the
// daemon built from its model comes back with the state as the frame left
// it (selection and scroll kept in range). Pure, and symmetric: every
// encoder here has its parser, so each side reads what the other wrote.
#pragma once

#include "facts/result.hpp"
#include "views/top_frame.hpp"
#include "views/top_state.hpp"

#include <map>
#include <string>
#include <string_view>

namespace shmbpf {

// Names and values of a query string, decoded; a name may repeat.
using QueryFields = std::multimap<std::string, std::string>;

// "a=1&b=x%20y": every byte but letters, digits and -._~ percent-encoded.
std::string query_string(const QueryFields &fields);
// The fields of a query string ('+' is a space, as in a form); an error for
// a bad percent escape.
Result<QueryFields> parse_query_string(std::string_view query);

// Everything of st that a frame depends on, as query fields (quit is not).
QueryFields top_state_fields(const TopState &st);
// The state those fields describe; fields absent keep TopState's defaults,
// and an unknown name or a bad value is an error that names it.
Result<TopState> top_state_from_fields(const QueryFields &fields);

// A frame and the state after it, as text: the state's query string on the
// first line, then one line per frame line, a letter for its style before
// its text (frame lines are escaped: they hold no newline).
std::string top_frame_reply(const TopFrame &frame, const TopState &state);
struct TopFrameReply {
  TopFrame frame;
  TopState state;
};
Result<TopFrameReply> parse_top_frame_reply(std::string_view body);

} // namespace shmbpf
