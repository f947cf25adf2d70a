// The columns of each kind of row, defined once and shared by `ls` and
// `top`: a process, a container, a mount or a segment reads the same in
// both. A column is its title and alignment (views/table.hpp) and how its
// cell is made from a row.
#pragma once

#include "model/engine.hpp"
#include "views/relations.hpp"
#include "views/table.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shmbpf {

// uid -> login name, for the uids that have one.
using UserNames = std::unordered_map<uint32_t, std::string>;

// The login names of the processes' uids, looked up with name_of ("" when a
// uid has none).
UserNames user_names(const std::vector<ProcessInfo> &processes,
                     const std::function<std::string(uint32_t uid)> &name_of);

// What cells need besides their row.
struct CellContext {
  uint64_t now_ns = 0;                  // CLOCK_BOOTTIME, for ages
  const UserNames *users = nullptr;     // a uid without a name shows as its number
  const Relations *relations = nullptr; // mount owners, containers' /dev/shm; none: "-"
};

// The USER cell: the login name, else the uid.
std::string user_cell(uint32_t uid, const CellContext &ctx);

template <class Row> struct EntityColumn {
  Column column;
  std::string (*cell)(const Row &, const CellContext &);
};

template <class Row> using ColumnSet = std::vector<EntityColumn<Row>>;

// PID USER COMM CONTAINER SEGS BYTES HELD CREATE/s UNHELD
const ColumnSet<ProcessInfo> &process_columns();
// ID NAME RUNTIME POD NAMESPACE PROCS SEGS BYTES SHM MOUNT %
const ColumnSet<ContainerInfo> &container_columns();
// The same without POD and NAMESPACE when no row is in a pod.
const ColumnSet<ContainerInfo> &container_columns_for(const std::vector<ContainerInfo> &rows);
// A container's name when its runtime's files gave one, else its short id;
// "-" for the host.
std::string container_cell(std::string_view id, std::string_view name);
// MOUNTPOINT OWNER SIZE USED USE% GROWTH FULL IN SEGS TRACKED
const ColumnSet<MountUsage> &mount_columns();
// PATH/NAME KIND SIZE BYTES STATE CREATOR HOLDERS AGE CONTAINER (the last
// left out on a screen too narrow for it)
const ColumnSet<SegmentInfo> &segment_columns();
// PRODUCER SEGS BYTES ORPHANS ORPHANED RESTART CREATORS
const ColumnSet<ProducerInfo> &producer_columns();

// A table with set's columns and no rows yet.
template <class Row> Table table_of(const ColumnSet<Row> &set, std::size_t gap) {
  Table t;
  t.gap = gap;
  t.columns.reserve(set.size());
  for (const EntityColumn<Row> &c : set)
    t.columns.push_back(c.column);
  return t;
}

// One row's cells, escaped.
template <class Row>
std::vector<std::string> cells_of(const ColumnSet<Row> &set, const Row &row,
                                  const CellContext &ctx) {
  std::vector<std::string> cells;
  cells.reserve(set.size());
  for (const EntityColumn<Row> &c : set)
    cells.push_back(c.cell(row, ctx));
  return cells;
}

// A table of every row in rows.
template <class Row>
Table table_of(const ColumnSet<Row> &set, const std::vector<Row> &rows, const CellContext &ctx,
               std::size_t gap) {
  Table t = table_of(set, gap);
  t.rows.reserve(rows.size());
  for (const Row &r : rows)
    t.rows.push_back(cells_of(set, r, ctx));
  return t;
}

} // namespace shmbpf
