// Hostile images: >= 10,000 mutants of a real cubin and fatbin (bit flips, truncations, header
// sizes that lie, section tables pointing outside the file) fed to cudyn_library_load_data
// through both APIs. Each mutant sits at the very end of a mapping followed by a PROT_NONE
// guard page, so reading one byte past it faults. cudyn must never crash; every result is
// counted by status. For comparison the same mutants go to raw cuLibraryLoadData in child
// processes (a crash there costs only the child), and the crashes are counted.
//   usage: mutants <cubin> <fatbin> [count=10000] [--raw | --raw-only | --validate-only]
//          mutants <cubin> <fatbin> <count> --dump <i> <file>   (write mutant i to file)
//   Structured mode (MUTANTS_STRUCTURED=1; count 0 = all): instead of random mutants, every
//   field of every structure of each image (ELF header, program and section headers, symbols,
//   relocations, .nv.info records, fatbin header and entry headers) set to boundary values (0,
//   1, all ones, powers of two, the image size - 1 / itself / + 1, just past the structure, the
//   value +- 1), and every single-bit flip of every header byte; each cubin mutant also wrapped,
//   LZ4-compressed, into a one-entry fatbin. Counts are printed per structure and field.
//   MUTANTS_EXTRA=a:b:... adds images (cubins or fatbins, e.g. a compressed one) to the corpus.
//   Beyond single fields (MUTANTS_KINDS=fields,records,multi,bounds,splice,ptx picks; all by
//   default): `.nv.info` records relabelled as every attribute that holds offsets, symbols or
//   sizes, and in `.nv.compat`, the global and the first kernel's `.nv.info` the first record
//   of each format and payload length relabelled as every attribute number (a value record
//   also with the values 8 and 0xffff; in a global table of 12-byte records the first made a
//   value record of every attribute number); a kernel's instruction-offset lists made to hold
//   records of their own (TensorRT's hand-assembled form: the first word a record's header);
//   `.nv.compat` records and `.nv.rel.action` words field
//   by field; note records and callgraph entries field by field; relocations retargeted at every
//   section and given every type class; several fields of one image at once ("multi", 64 per
//   image, deterministic); truncation at every section or entry boundary (and with e_shnum and
//   e_phnum 0), extension past the end with the size fields following (the fatbin payload
//   claiming 8..64 zero or nonzero bytes more); entries spliced in from other images, swapped,
//   duplicated and given each other's payloads; PTX entries' text corrupted (a non-ASCII byte,
//   no NUL, an early NUL, its .version and .target altered); in top-level cubins, names
//   ("names"): each of the first 48 sections given every name, type, flags, link and info word
//   the others carry, each of the first 48 symbols every other symbol's name, type and binding,
//   section, value and size, each of the first 48 relocations of a relocation section every
//   other relocation's offset, type, symbol and addend, each kernel's .nv.info values and
//   payload words every other kernel's of the same attribute (16 at most), and in each string
//   table the first 64 names' NUL dropped, last byte changed or first byte zeroed. MUTANTS_FIELDS=regex
//   keeps only the mutations whose label matches (e.g. the fields a change loosened).
//          mutants <cubin> <fatbin> <count> --plan-size   (print how many mutants count means)
//          mutants <cubin> <fatbin> <count> --label <i>...  (what structured mutants i... change)
//   On a GPU every mutant cudyn accepts is then preloaded (cudyn_library_preload on device 0:
//   its code loaded into the primary context and every kernel's function loaded), so CUDA's
//   whole loader reads it, not only the little a lazy cuLibraryLoadData reads with no context
//   current; MUTANTS_PRELOAD=0 leaves that out (a load alone, as before 2026-12-07).
//   env: MUTANTS_VERDICTS=file (every verdict, for diffing two builds), MUTANTS_TRACE, MUTANTS_FROM, MUTANTS_TO,
//        MUTANTS_COMPANION=fatbin (entries appended after each LZ4-wrapped mutant),
//        MUTANTS_RAW_JOBS (parallel raw shards, 8), MUTANTS_RAW_SECONDS (raw pass time cap, 240)
//   (internal: mutants <cubin> <fatbin> <count> --raw-child <first> <progress-file>)
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <set>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <map>
#include <random>
#include <regex>
#include "test_util.hpp"

// A buffer whose last byte is immediately followed by an unreadable page.
struct Guarded {
  char *base = nullptr;
  size_t map_len = 0;
  char *data = nullptr;
  explicit Guarded(const std::vector<char> &bytes) {
    long page = sysconf(_SC_PAGESIZE);
    size_t body = (bytes.size() + page - 1) / page * page;
    map_len = body + page;
    base = static_cast<char *>(mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base == MAP_FAILED) FAIL("mmap");
    mprotect(base + body, page, PROT_NONE);
    data = base + body - bytes.size();
    if (!bytes.empty()) std::memcpy(data, bytes.data(), bytes.size());
  }
  ~Guarded() { munmap(base, map_len); }
};

static void put32(std::vector<char> &v, size_t off, uint32_t x) { if (off + 4 <= v.size()) std::memcpy(&v[off], &x, 4); }
static void put64(std::vector<char> &v, size_t off, uint64_t x) { if (off + 8 <= v.size()) std::memcpy(&v[off], &x, 8); }
static void put16(std::vector<char> &v, size_t off, uint16_t x) { if (off + 2 <= v.size()) std::memcpy(&v[off], &x, 2); }

// ---- structured mode ------------------------------------------------------------------------

static uint64_t get(const std::vector<char> &v, size_t off, int w) {
  uint64_t x = 0;
  if (off + w <= v.size()) std::memcpy(&x, &v[off], w);
  return x;
}
static void put(std::vector<char> &v, size_t off, int w, uint64_t x) {
  if (off + w <= v.size()) std::memcpy(&v[off], &x, w);
}

// One field of one structure of a corpus image: where it is, how wide, and the end of the
// structure it belongs to (for "just past the structure").
struct Field {
  int image;
  std::string label;  // "section.sh_info": the structure and field, indices left out
  size_t off;
  int width;
  size_t structure_end;
};

// A mutation: field `field` set to `value`, or (flip >= 0) bit `flip` of byte `off` flipped;
// `wrap`: the mutated cubin is then LZ4-compressed into a one-entry fatbin.
struct Mutation {
  size_t field;
  uint64_t value;
  int flip;
  size_t off;
  bool wrap;
  int special = -1;  // >= 0: g_specials[special] instead of a field mutation
};

// A mutation that is not one field set to one value: records relabelled, several fields at
// once, truncation and extension at structure boundaries, spliced entries, corrupted PTX.
enum SpecialKind { RELABEL, RELABEL_VALUE, VALUE_RECORD, RETARGET, MULTI, TRUNCATE, TRUNCATE_NO_TABLES, EXTEND_FATBIN, EXTEND_ELF, SPLICE_FOREIGN,
                   SWAP_ENTRIES, DUP_ENTRY, SWAP_PAYLOADS, PTX_BYTE, PTX_NO_NUL, PTX_EARLY_NUL, PTX_DIRECTIVE, NAME_SET, NEST };
struct Special {
  int image;
  std::string label;
  SpecialKind kind;
  size_t a, b;  // kind-specific: offsets, indices, lengths
  uint64_t v;
};
static std::vector<Special> g_specials;

static std::vector<std::vector<char>> g_corpus;
static std::vector<Field> g_fields;
static std::vector<Mutation> g_plan;
// Per image, its fatbin entries: offset, header size, payload size.
struct Entry { size_t off, hs, ps; };
static std::map<int, std::vector<Entry>> g_entries;

static bool is_fatbin(const std::vector<char> &v) { return get(v, 0, 4) == 0xBA55ED50u; }
static bool is_cubin(const std::vector<char> &v) { return v.size() >= 64 && get(v, 0, 4) == 0x464C457Fu; }

static void add(int image, const std::string &label, size_t off, int width, size_t end) {
  if (off + width <= g_corpus[image].size()) g_fields.push_back({image, label, off, width, end});
}

// The fields of a cubin at `base` in image `image` (a fatbin's uncompressed ELF entry too).
static void cubin_fields(int image, size_t base, const std::string &prefix) {
  const auto &v = g_corpus[image];
  static const struct { const char *name; size_t off; int w; } ehdr[] = {
      {"e_ident.class", 4, 1}, {"e_ident.data", 5, 1}, {"e_ident.version", 6, 1}, {"e_ident.osabi", 7, 1},
      {"e_ident.abiversion", 8, 1}, {"e_ident.pad", 9, 1}, {"e_type", 16, 2}, {"e_machine", 18, 2},
      {"e_version", 20, 4}, {"e_entry", 24, 8}, {"e_phoff", 32, 8}, {"e_shoff", 40, 8}, {"e_flags", 48, 4},
      {"e_ehsize", 52, 2}, {"e_phentsize", 54, 2}, {"e_phnum", 56, 2}, {"e_shentsize", 58, 2},
      {"e_shnum", 60, 2}, {"e_shstrndx", 62, 2}};
  for (auto &f : ehdr) add(image, prefix + "ELF header." + f.name, base + f.off, f.w, base + 64);
  const size_t phoff = get(v, base + 32, 8), shoff = get(v, base + 40, 8);
  const size_t phnum = get(v, base + 56, 2), shnum = get(v, base + 60, 2);
  static const struct { const char *name; size_t off; int w; } phdr[] = {
      {"p_type", 0, 4}, {"p_flags", 4, 4}, {"p_offset", 8, 8}, {"p_vaddr", 16, 8},
      {"p_paddr", 24, 8}, {"p_filesz", 32, 8}, {"p_memsz", 40, 8}, {"p_align", 48, 8}};
  for (size_t p = 0; p < phnum && p < 16; ++p)
    for (auto &f : phdr) add(image, prefix + "program header." + f.name, base + phoff + 56 * p + f.off, f.w, base + phoff + 56 * (p + 1));
  static const struct { const char *name; size_t off; int w; } shdr[] = {
      {"sh_name", 0, 4}, {"sh_type", 4, 4}, {"sh_flags", 8, 8}, {"sh_addr", 16, 8}, {"sh_offset", 24, 8},
      {"sh_size", 32, 8}, {"sh_link", 40, 4}, {"sh_info", 44, 4}, {"sh_addralign", 48, 8}, {"sh_entsize", 56, 8}};
  int kernel_tables = 0;  // kernels' .nv.info tables met so far
  // The "names" family (top-level cubins): the names, types, flags, links and infos the first
  // 48 sections carry and the names, kinds and sections of the first 48 symbols, each given to
  // the others; the names' text in the string tables altered.
  struct Traded { size_t at; int width; const char *label; };
  static const Traded sec_fields[] = {{0, 4, "section renamed as another section"},
                                      {4, 4, "section given another section's type"},
                                      {8, 8, "section given another section's flags"},
                                      {40, 4, "section given another section's link"},
                                      {44, 4, "section given another section's info"}};
  static const Traded sym_fields[] = {{0, 4, "symbol renamed as another symbol"},
                                      {4, 1, "symbol given another symbol's type and binding"},
                                      {6, 2, "symbol given another symbol's section"},
                                      {8, 8, "symbol given another symbol's value"},
                                      {16, 8, "symbol given another symbol's size"}};
  // Relocations (the first 48 of each relocation section): offset, type, symbol and (RELA)
  // addend, each given every other's in the cubin.
  static const Traded rel_fields[] = {{0, 8, "relocation given another relocation's offset"},
                                      {8, 4, "relocation given another relocation's type"},
                                      {12, 4, "relocation given another relocation's symbol"},
                                      {16, 8, "relocation given another relocation's addend"}};
  std::set<uint64_t> sec_values[5], sym_values[5], rel_values[4];
  // Kernels' .nv.info records (the first 32 of each table): each value (format 3) or payload
  // word (format 4, the first four) given the other kernels' values of the same attribute,
  // format, length and word.
  struct RecordWord { uint64_t key; size_t at; int width; };
  std::vector<RecordWord> record_words;
  std::map<uint64_t, std::set<uint64_t>> record_values;
  // The tables whose records trade fields: symbols (from the second), relocations (REL or RELA).
  struct TradedTable { const Traded *fields; std::set<uint64_t> *values; int n; size_t entry, first; };
  auto traded_table = [&](uint32_t type) -> TradedTable {
    if (type == 2) return {sym_fields, sym_values, 5, 24, 1};
    if (type == 4) return {rel_fields, rel_values, 4, 24, 0};
    if (type == 9) return {rel_fields, rel_values, 3, 16, 0};
    return {nullptr, nullptr, 0, 1, 0};
  };
  auto trade = [&](const Traded *fields, std::set<uint64_t> *values, int n, size_t record) {
    for (int f = 0; f < n; ++f)
      for (uint64_t x : values[f])
        if (x != get(v, record + fields[f].at, fields[f].width))
          g_specials.push_back({image, fields[f].label, NAME_SET, record + fields[f].at, (size_t)fields[f].width, x});
  };
  for (size_t i = 1; base == 0 && i < shnum && i < 48 && shoff + 64 * (i + 1) <= v.size(); ++i) {
    const size_t sh = shoff + 64 * i;
    for (int f = 0; f < 5; ++f) sec_values[f].insert(get(v, sh + sec_fields[f].at, sec_fields[f].width));
    const size_t off = get(v, sh + 24, 8), size = get(v, sh + 32, 8);
    const TradedTable tt = traded_table((uint32_t)get(v, sh + 4, 4));
    if (tt.n > 0 && off + size <= v.size() && off + size >= off)
      for (size_t k = tt.first; k < size / tt.entry && k < 48; ++k)
        for (int f = 0; f < tt.n; ++f) tt.values[f].insert(get(v, off + tt.entry * k + tt.fields[f].at, tt.fields[f].width));
  }
  const size_t shstrndx = get(v, base + 62, 2);
  for (size_t i = 0; i < shnum && i < 256; ++i) {
    const size_t sh = base + shoff + 64 * i;
    for (auto &f : shdr) add(image, prefix + "section header." + f.name, sh + f.off, f.w, sh + 64);
    const uint32_t type = (uint32_t)get(v, sh + 4, 4);
    const size_t off = base + get(v, sh + 24, 8), size = get(v, sh + 32, 8);
    if (base == 0 && i > 0 && i < 48) trade(sec_fields, sec_values, 5, sh);
    if (off + size > v.size()) continue;
    // Each of the first 48 symbols and relocations given the others' fields.
    const TradedTable tt = traded_table(type);
    for (size_t k = tt.first; base == 0 && tt.n > 0 && k < size / tt.entry && k < 48; ++k) trade(tt.fields, tt.values, tt.n, off + tt.entry * k);
    if (type == 3 && base == 0) {  // the first 64 names of a string table: NUL dropped, last byte changed, emptied
      const std::string what = i == shstrndx ? "section names: " : "names: ";
      size_t at = off + 1;
      for (int r = 0; at < off + size && r < 64; ++r) {
        size_t end = at;
        while (end < off + size && v[end] != 0) ++end;
        if (end >= off + size) break;
        g_specials.push_back({image, what + "a name's NUL dropped (it runs into the next)", NAME_SET, end, 1, (uint64_t)'_'});
        if (end > at) {
          g_specials.push_back({image, what + "a name's last byte changed", NAME_SET, end - 1, 1, (uint64_t)(uint8_t)(v[end - 1] ^ 1)});
          g_specials.push_back({image, what + "a name emptied", NAME_SET, at, 1, 0});
        }
        at = end + 1;
      }
    }
    if (type == 2) {  // symbols: the first 24
      static const struct { const char *name; size_t off; int w; } sym[] = {
          {"st_name", 0, 4}, {"st_info", 4, 1}, {"st_other", 5, 1}, {"st_shndx", 6, 2}, {"st_value", 8, 8}, {"st_size", 16, 8}};
      for (size_t k = 0; k < size / 24 && k < 24; ++k)
        for (auto &f : sym) add(image, prefix + "symbol." + f.name, off + 24 * k + f.off, f.w, off + 24 * (k + 1));
    } else if (type == 4 || type == 9) {  // relocations: the first 16
      const size_t w = type == 4 ? 24 : 16;
      for (size_t k = 0; k < size / w && k < 16; ++k) {
        add(image, prefix + "relocation.r_offset", off + w * k, 8, off + w * (k + 1));
        add(image, prefix + "relocation.r_type", off + w * k + 8, 4, off + w * (k + 1));
        add(image, prefix + "relocation.r_sym", off + w * k + 12, 4, off + w * (k + 1));
        if (w == 24) add(image, prefix + "relocation.r_addend", off + w * k + 16, 8, off + w * (k + 1));
      }
    } else if (type == 0x70000000 || type == 0x70000086) {
      // .nv.info and .nv.compat: records of (format, attribute, 16-bit value; format 4: that
      // many payload bytes), every one's header and payload words.
      const bool compat = type == 0x70000086;
      const std::string table = compat ? ".nv.compat" : ".nv.info";
      // In .nv.compat, the global .nv.info and the first kernel's .nv.info: the first record
      // of each format (format 4: of each payload length) relabelled as every attribute number
      // (value or payload kept), and a value record also given the values 8 and 0xffff (the
      // driver indexes a table with one global attribute's value: docs/hardening.md).
      const bool global = get(v, sh + 44, 4) == 0;
      const bool every_attr = base == 0 && (compat || global || kernel_tables++ == 0);
      const std::string where = compat ? "" : global ? " (global table)" : " (a kernel's table)";
      std::set<size_t> shapes_done;  // format, and for format 4 the length
      bool value_record_put = false;
      size_t p = off;
      for (int r = 0; p + 4 <= off + size && r < 64; ++r) {
        const int format = (uint8_t)v[p];
        const size_t len = format == 4 ? get(v, p + 2, 2) : 0;
        const size_t end = p + 4 + len;
        if (!compat && !global && base == 0 && r < 32 && end <= off + size && (format == 3 || format == 4)) {
          const uint64_t key = (uint64_t)format << 40 | (uint64_t)(uint8_t)v[p + 1] << 32 | (uint64_t)len << 8;
          if (format == 3) record_words.push_back({key, p + 2, 2});
          for (size_t w = 0; format == 4 && w < 4 && 4 * (w + 1) <= len; ++w) record_words.push_back({key | w, p + 4 + 4 * w, 4});
        }
        add(image, prefix + table + ".format", p, 1, end);
        add(image, prefix + table + ".attribute", p + 1, 1, end);
        add(image, prefix + table + ".value_or_length", p + 2, 2, end);
        for (size_t q = p + 4; q + 4 <= end && q + 4 <= off + size && q < p + 4 + 64; q += 4)
          add(image, prefix + table + ".payload_word", q, 4, end);
        // The record relabelled as each attribute that lists offsets or symbols, or has a
        // fixed shape the loader reads (its payload kept).
        static const uint8_t relabel[] = {0x05, 0x0a, 0x0f, 0x11, 0x12, 0x17, 0x1c, 0x1d, 0x23, 0x25, 0x27, 0x28,
                                          0x2e, 0x2f, 0x31, 0x39, 0x40, 0x44, 0x46, 0x47, 0x57, 0x59};
        if (!compat && format == 4 && base == 0)
          for (uint8_t a : relabel)
            if (a != (uint8_t)v[p + 1]) g_specials.push_back({image, prefix + ".nv.info record relabelled", RELABEL, p + 1, 0, a});
        // A kernel's instruction-offset list whose payload becomes records of its own, as in
        // TensorRT 8.5's hand-assembled plugin kernel: its first word the header of a record of
        // every attribute that lists offsets or words, of the rest of the payload; and with 12
        // bytes or more, TensorRT's exact form (a one-offset record of its own attribute, then
        // an INDIRECT_BRANCH_TARGETS record of the rest).
        static const uint8_t offset_lists[] = {0x03, 0x1c, 0x1d, 0x25, 0x27, 0x28, 0x2e, 0x31, 0x39, 0x40, 0x44, 0x46};
        static const uint8_t lists[] = {0x03, 0x1c, 0x1d, 0x25, 0x27, 0x28, 0x29, 0x2e, 0x31, 0x34, 0x39, 0x40, 0x44, 0x46, 0x55};  // and word lists
        const uint8_t attr = (uint8_t)v[p + 1];
        if (!compat && !global && format == 4 && base == 0 && len >= 8 && end <= off + size &&
            std::find(std::begin(offset_lists), std::end(offset_lists), attr) != std::end(offset_lists)) {
          for (uint8_t a : lists)
            g_specials.push_back({image, prefix + ".nv.info offset list holding a record", NEST, p + 4, 0, 4u | a << 8 | (uint64_t)(len - 4) << 16});
          if (len >= 12)
            g_specials.push_back({image, prefix + ".nv.info offset list holding a record", NEST, p + 4, p + 12,
                                  (4u | attr << 8 | 4u << 16) | (uint64_t)(4u | 0x34u << 8 | (uint64_t)(len - 12) << 16) << 32});
        }
        if (every_attr && format >= 1 && format <= 4 && end <= off + size && shapes_done.insert(format << 16 | len).second) {
          for (int a = 0; a < 256; ++a) {
            if (a != (uint8_t)v[p + 1])
              g_specials.push_back({image, prefix + table + " record as every attribute" + where, RELABEL, p + 1, 0, (uint64_t)a});
            if (format != 4)
              for (uint64_t value : {uint64_t(8), uint64_t(0xffff)})
                g_specials.push_back({image, prefix + table + " record as every attribute, value" + where, RELABEL_VALUE, p + 1, 0,
                                      (uint64_t)a | value << 8});
          }
        }
        // Toolkits write a global .nv.info of value records only in cubins without kernels: in
        // a table with kernels, its first 12-byte record becomes a value record of every
        // attribute number (values 1, 8, 257, 0xffff), padded with two records toolkits write.
        if (every_attr && !compat && global && format == 4 && len == 8 && end <= off + size && !value_record_put) {
          value_record_put = true;
          for (int a = 0; a < 256; ++a)
            for (uint64_t value : {uint64_t(1), uint64_t(8), uint64_t(257), uint64_t(0xffff)})
              g_specials.push_back({image, prefix + ".nv.info value record as every attribute (global table, in place of a 12-byte record)",
                                    VALUE_RECORD, p, 0, (uint64_t)a | value << 8});
        }
        p = end;
      }
    } else if (type == 0x7000000b) {  // .nv.rel.action: its first 32-bit words
      for (size_t q = off; q + 4 <= off + size && q < off + 64; q += 4) add(image, prefix + "rel.action.word", q, 4, q + 4);
    } else if (type == 7) {  // notes: every record's header and its first description words
      size_t p = off;
      for (int r = 0; p + 12 <= off + size && r < 8; ++r) {
        const size_t nsz = get(v, p, 4), dsz = get(v, p + 4, 4);
        const size_t desc = p + 12 + ((nsz + 3) & ~size_t(3)), end = desc + ((dsz + 3) & ~size_t(3));
        add(image, prefix + "note.namesz", p, 4, end);
        add(image, prefix + "note.descsz", p + 4, 4, end);
        add(image, prefix + "note.type", p + 8, 4, end);
        for (size_t q = desc; q + 4 <= desc + dsz && q + 4 <= off + size && q < desc + 32; q += 4)
          add(image, prefix + "note.desc_word", q, 4, end);
        if (nsz > 4096 || dsz > (1u << 20)) break;
        p = end;
      }
    } else if (type == 0x70000001) {  // .nv.callgraph: (caller, callee) pairs
      for (size_t k = 0; k < size / 8 && k < 16; ++k) {
        add(image, prefix + "callgraph.caller", off + 8 * k, 4, off + 8 * (k + 1));
        add(image, prefix + "callgraph.callee", off + 8 * k + 4, 4, off + 8 * (k + 1));
      }
    }
    // A relocation section retargeted at every section (NOBITS ones too).
    if ((type == 4 || type == 9) && base == 0)
      for (size_t t = 0; t < shnum && t < 64; ++t)
        g_specials.push_back({image, prefix + "relocation section retargeted", RETARGET, sh + 44, 0, t});
    // Truncation at the section's start and end, with and without the tables.
    if (base == 0 && i > 0 && i < 64)
      for (size_t cut : {off, off + size}) {
        g_specials.push_back({image, prefix + "truncated at a section boundary", TRUNCATE, cut, 0, 0});
        g_specials.push_back({image, prefix + "truncated at a section boundary, e_shnum = e_phnum = 0", TRUNCATE_NO_TABLES, cut, 0, 0});
      }
  }
  if (base == 0)
    for (uint64_t n : {8, 64, 4096})
      g_specials.push_back({image, prefix + "extended past its end (last section grows)", EXTEND_ELF, 0, 0, n});
  for (const auto &w : record_words) record_values[w.key].insert(get(v, w.at, w.width));
  for (const auto &w : record_words) {
    int n = 0;
    for (uint64_t x : record_values[w.key])
      if (x != get(v, w.at, w.width) && n++ < 16)
        g_specials.push_back({image, ".nv.info record given another kernel's value", NAME_SET, w.at, (size_t)w.width, x});
  }
}

static void fatbin_fields(int image) {
  const auto &v = g_corpus[image];
  add(image, "fatbin header.magic", 0, 4, 16);
  add(image, "fatbin header.version", 4, 2, 16);
  add(image, "fatbin header.header_size", 6, 2, 16);
  add(image, "fatbin header.payload_size", 8, 8, 16);
  static const struct { const char *name; size_t off; int w; } ent[] = {
      {"kind", 0, 2}, {"word_02", 2, 2}, {"header_size", 4, 4}, {"payload_size", 8, 8},
      {"compressed_size", 16, 4}, {"options_offset", 20, 4}, {"version", 24, 4}, {"sm", 28, 4},
      {"name_offset", 32, 4}, {"name_length", 36, 4}, {"flags", 40, 8}, {"word_30", 48, 8},
      {"uncompressed_size", 56, 8}};
  const size_t total = 16 + get(v, 8, 8);
  size_t off = 16;
  for (int e = 0; off + 64 <= total && off + 64 <= v.size() && e < 64; ++e) {
    const size_t hs = get(v, off + 4, 4), ps = get(v, off + 8, 8);
    // The entry's kind and sm in the label: which entries CUDA's loader reads shows per entry.
    const std::string who = std::string(get(v, off, 2) == 1 ? "ptx " : "") + "sm_" + std::to_string(get(v, off + 28, 4));
    for (auto &f : ent) add(image, "fatbin entry header (" + who + ")." + f.name, off + f.off, f.w, off + hs);
    for (size_t q = off + 64; q + 4 <= off + hs && q < off + 256; q += 4) add(image, "fatbin entry header (" + who + ").extension_word", q, 4, off + hs);
    const uint64_t flags = get(v, off + 40, 8);
    if (get(v, off, 2) == 2 && !(flags & 0xa000) && is_cubin(std::vector<char>(v.begin() + std::min(v.size(), off + hs), v.begin() + std::min(v.size(), off + hs + 64))))
      cubin_fields(image, off + hs, "entry " + who + " cubin ");
    if (hs < 64 || off + hs + ps <= off) break;
    // Truncated at the entry's start and at its payload's start; PTX text corrupted.
    g_specials.push_back({image, "fatbin truncated at an entry boundary", TRUNCATE, off, 1, 0});
    g_specials.push_back({image, "fatbin truncated at an entry's payload", TRUNCATE, off + hs, 1, 0});
    if (get(v, off, 2) == 1 && !(flags & 0xa000) && off + hs + ps <= v.size()) {
      for (size_t q = off + hs; q < off + hs + ps && q < off + hs + 4096; q += 97)
        g_specials.push_back({image, "PTX entry: a non-ASCII byte", PTX_BYTE, q, 0, 0x80 | (q & 0x7f)});
      g_specials.push_back({image, "PTX entry: no NUL", PTX_NO_NUL, off + hs, ps, 0});
      for (size_t q = off + hs + 1; q < off + hs + ps; q += std::max<size_t>(1, ps / 16))
        g_specials.push_back({image, "PTX entry: an early NUL", PTX_EARLY_NUL, q, 0, 0});
      g_specials.push_back({image, "PTX entry: .version altered", PTX_DIRECTIVE, off + hs, ps, 0});
      g_specials.push_back({image, "PTX entry: .target altered", PTX_DIRECTIVE, off + hs, ps, 1});
    }
    g_entries[image].push_back({off, hs, ps});
    off += hs + ps;
  }
  const auto &es = g_entries[image];
  for (uint64_t n : {8, 16, 64, 72})
    for (int nonzero = 0; nonzero < 2; ++nonzero)
      g_specials.push_back({image, nonzero ? "fatbin payload claims bytes after its last entry (nonzero)" : "fatbin payload claims zero bytes after its last entry",
                            EXTEND_FATBIN, (size_t)nonzero, 0, n});
  for (size_t a = 0; a < es.size() && a < 16; ++a) {
    for (size_t b = a + 1; b < es.size() && b < 16; ++b) {
      g_specials.push_back({image, "fatbin entries swapped", SWAP_ENTRIES, a, b, 0});
      g_specials.push_back({image, "fatbin entries' payloads swapped (headers kept)", SWAP_PAYLOADS, a, b, 0});
    }
    g_specials.push_back({image, "fatbin entry duplicated", DUP_ENTRY, a, 0, 0});
  }
}

// An entry of image `from` spliced in for entry `a` of every fatbin (after all images are read).
static void splice_plan() {
  for (int img = 0; img < (int)g_corpus.size(); ++img)
    for (int from = 0; from < (int)g_corpus.size(); ++from)
      if (from != img)
        for (size_t a = 0; a < g_entries[img].size() && a < 4; ++a)
          for (size_t b = 0; b < g_entries[from].size() && b < 4; ++b)
            g_specials.push_back({img, "fatbin entry spliced in from another image", SPLICE_FOREIGN, a, b, (uint64_t)from});
}

// Several fields of one image at once: `count` mutants per image, each 2 to 4 fields of it set
// to boundary values, all drawn from the mutant's own seed.
static void multi_plan(int count) {
  std::map<int, int> fields_of;
  for (const auto &f : g_fields) fields_of[f.image]++;
  for (auto &kv : fields_of)
    for (int k = 0; k < count; ++k) g_specials.push_back({kv.first, "several fields at once", MULTI, 0, 0, (uint64_t)k});
}

// Boundary values for a field: 0, 1, all ones, powers of two, the image size -1/0/+1, just past
// the structure and the image (as offsets from where a field of that kind counts), +-1.
static std::vector<uint64_t> boundary_values(const Field &f, const std::vector<char> &img) {
  const uint64_t ones = f.width == 8 ? ~0ull : ((1ull << (8 * f.width)) - 1);
  const uint64_t orig = get(img, f.off, f.width);
  std::vector<uint64_t> vals = {0, 1, ones, ones >> 1, ones - 1, orig + 1, orig - 1, orig ^ (1ull << (8 * f.width - 1)),
                                img.size() - 1, img.size(), img.size() + 1, f.structure_end, f.structure_end + 1,
                                f.structure_end - f.off};
  for (int k : {1, 2, 3, 4, 6, 8, 12, 15, 16, 24, 31, 32, 48, 63})
    if (k < 8 * f.width) vals.push_back(1ull << k);
  std::vector<uint64_t> out;
  for (uint64_t x : vals) {
    x &= ones;
    if (x != orig && std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  }
  return out;
}

static void build_plan(const std::vector<char> &cubin, const std::vector<char> &fatbin) {
  g_corpus = {cubin, fatbin};
  if (const char *extra = std::getenv("MUTANTS_EXTRA")) {
    std::string list = extra;
    for (size_t a = 0, b; a < list.size(); a = b + 1) {
      b = list.find(':', a);
      if (b == std::string::npos) b = list.size();
      if (b > a) g_corpus.push_back(read_file(list.substr(a, b - a).c_str()));
    }
  }
  for (int i = 0; i < (int)g_corpus.size(); ++i) {
    if (is_cubin(g_corpus[i])) cubin_fields(i, 0, "");
    else if (is_fatbin(g_corpus[i])) fatbin_fields(i);
  }
  splice_plan();
  multi_plan(64);
  // MUTANTS_KINDS: which families of mutation (default all); MUTANTS_FIELDS: a regex the
  // mutation's label must match.
  const std::string kinds = std::getenv("MUTANTS_KINDS") ? std::getenv("MUTANTS_KINDS") : "fields,records,multi,bounds,splice,ptx,names";
  auto kind_on = [&](const char *k) { return kinds.find(k) != std::string::npos; };
  const char *fre = std::getenv("MUTANTS_FIELDS");
  const std::regex filter(fre ? fre : ".*");
  auto wanted = [&](const std::string &label) { return std::regex_search(label, filter); };
  for (size_t k = 0; k < g_specials.size(); ++k) {
    const Special &sp = g_specials[k];
    const char *family = sp.kind == NAME_SET ? "names"
                         : sp.kind == RELABEL || sp.kind == RELABEL_VALUE || sp.kind == VALUE_RECORD || sp.kind == RETARGET || sp.kind == NEST ? "records"
                         : sp.kind == MULTI                        ? "multi"
                         : sp.kind <= EXTEND_ELF                   ? "bounds"
                         : sp.kind <= SWAP_PAYLOADS                ? "splice"
                                                                   : "ptx";
    if (!kind_on(family) || !wanted(sp.label)) continue;
    // (Not for the every-attribute sweep nor the names: what they test is the loader's reading
    // of the attribute or name, the same wrapped or not.)
    const bool sweep = sp.label.find("as every attribute") != std::string::npos || sp.kind == NAME_SET;
    const bool wrap_too = is_cubin(g_corpus[sp.image]) && sp.kind != TRUNCATE && sp.kind != TRUNCATE_NO_TABLES && !sweep;
    for (int w = 0; w <= (wrap_too ? 1 : 0); ++w) g_plan.push_back({0, 0, -1, 0, w == 1, (int)k});
  }
  if (!kind_on("fields")) return;
  for (size_t f = 0; f < g_fields.size(); ++f) {
    const auto &fd = g_fields[f];
    if (!wanted(fd.label)) continue;
    const bool wrap_too = is_cubin(g_corpus[fd.image]);
    for (uint64_t x : boundary_values(fd, g_corpus[fd.image]))
      for (int w = 0; w <= (wrap_too ? 1 : 0); ++w) g_plan.push_back({f, x, -1, 0, w == 1});
    // Every bit of every header byte (a field's bytes, once each).
    for (int b = 0; b < fd.width; ++b)
      for (int bit = 0; bit < 8; ++bit)
        for (int w = 0; w <= (wrap_too ? 1 : 0); ++w) g_plan.push_back({f, 0, bit, fd.off + b, w == 1});
  }
}

// `cubin` LZ4-compressed (one block of literals) into a one-entry fatbin, as fatbinary lays
// out a compressed entry (flags 0x2011).
static std::vector<char> wrap_lz4(const std::vector<char> &cubin, uint32_t sm) {
  std::vector<char> stream;
  const size_t n = cubin.size();
  stream.push_back((char)((n < 15 ? n : 15) << 4));
  if (n >= 15) {
    size_t r = n - 15;
    for (; r >= 255; r -= 255) stream.push_back((char)255);
    stream.push_back((char)r);
  }
  stream.insert(stream.end(), cubin.begin(), cubin.end());
  const size_t padded = (stream.size() + 7) / 8 * 8;
  std::vector<char> f(16 + 64 + padded, 0);
  put(f, 0, 4, 0xBA55ED50u); put(f, 4, 2, 1); put(f, 6, 2, 16); put(f, 8, 8, 64 + padded);
  put(f, 16, 2, 2); put(f, 18, 2, 0x0101); put(f, 20, 4, 64); put(f, 24, 8, padded);
  put(f, 32, 4, stream.size()); put(f, 40, 2, 8); put(f, 42, 2, 1); put(f, 44, 4, sm);
  put(f, 56, 8, 0x2011); put(f, 72, 8, n);
  std::memcpy(&f[80], stream.data(), stream.size());
  return f;
}

static uint32_t cubin_sm(const std::vector<char> &c) {
  const uint32_t flags = (uint32_t)get(c, 48, 4);
  return (uint8_t)c[8] >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
}

// With a count below the plan's size, mutant i is spread over the whole plan (every field
// still gets some), not its first `count` entries.
static int g_count = 0;
static const Mutation &planned(int i) {
  const size_t n = g_plan.size();
  return g_plan[g_count > 0 && (size_t)g_count < n ? (size_t)i * n / g_count : (size_t)i];
}

// The bytes of entry `k` of image `img` (header and payload).
static std::vector<char> entry_bytes(int img, size_t k) {
  const Entry &e = g_entries[img][k];
  const auto &v = g_corpus[img];
  return std::vector<char>(v.begin() + e.off, v.begin() + std::min(v.size(), e.off + e.hs + e.ps));
}

// A fatbin of image `img` with its entries replaced by `entries` (the header's payload size follows).
static std::vector<char> with_entries(int img, const std::vector<std::vector<char>> &entries) {
  const auto &v = g_corpus[img];
  std::vector<char> f(v.begin(), v.begin() + 16);
  for (auto &e : entries) f.insert(f.end(), e.begin(), e.end());
  put(f, 8, 8, f.size() - 16);
  return f;
}

static std::vector<char> special_mutant(const Special &sp) {
  std::vector<char> v = g_corpus[sp.image];
  std::vector<std::vector<char>> es;
  if (g_entries.count(sp.image))
    for (size_t k = 0; k < g_entries[sp.image].size(); ++k) es.push_back(entry_bytes(sp.image, k));
  switch (sp.kind) {
    case RELABEL: v[sp.a] = (char)sp.v; break;
    case RELABEL_VALUE: put(v, sp.a, 3, sp.v); break;
    case VALUE_RECORD: {
      const unsigned char rec[12] = {3, (unsigned char)sp.v, (unsigned char)(sp.v >> 8), (unsigned char)(sp.v >> 16), 3, 0x5f, 1, 1, 3, 0x5f, 1, 1};
      if (sp.a + 12 <= v.size()) std::memcpy(&v[sp.a], rec, 12);
      break;
    }
    case RETARGET: put(v, sp.a, 4, sp.v); break;
    case NEST:
      put(v, sp.a, 4, sp.v & 0xffffffffu);
      if (sp.b) put(v, sp.b, 4, sp.v >> 32);
      break;
    case MULTI: {
      std::mt19937_64 g(0x6d756c74ull ^ (sp.v * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)sp.image << 40));
      std::vector<size_t> mine;
      for (size_t f = 0; f < g_fields.size(); ++f)
        if (g_fields[f].image == sp.image) mine.push_back(f);
      for (int n = 2 + (int)(g() % 3); n > 0 && !mine.empty(); --n) {
        const Field &f = g_fields[mine[g() % mine.size()]];
        auto vals = boundary_values(f, v);
        if (!vals.empty()) put(v, f.off, f.width, vals[g() % vals.size()]);
      }
      break;
    }
    case TRUNCATE:
      v.resize(std::min(v.size(), sp.a));
      if (sp.b == 1 && v.size() >= 16) put(v, 8, 8, v.size() - 16);  // a fatbin whose header follows the cut
      break;
    case TRUNCATE_NO_TABLES:
      v.resize(std::min(v.size(), sp.a));
      put(v, 60, 2, 0);
      put(v, 56, 2, 0);
      break;
    case EXTEND_FATBIN:
      v.resize(16 + get(v, 8, 8) <= v.size() ? 16 + get(v, 8, 8) : v.size());
      for (uint64_t k = 0; k < sp.v; ++k) v.push_back(sp.a ? (char)(0x11 + k) : 0);
      put(v, 8, 8, v.size() - 16);
      break;
    case EXTEND_ELF: {
      // The last section in the file grows over the new bytes.
      const size_t shoff = get(v, 40, 8), shnum = get(v, 60, 2);
      size_t last = 0, last_end = 0;
      for (size_t i = 1; i < shnum; ++i) {
        const size_t e = get(v, shoff + 64 * i + 24, 8) + get(v, shoff + 64 * i + 32, 8);
        if (get(v, shoff + 64 * i + 4, 4) != 8 && e <= v.size() && e >= last_end) last = i, last_end = e;
      }
      v.insert(v.begin() + last_end, sp.v, (char)0);
      const size_t new_shoff = shoff >= last_end ? shoff + sp.v : shoff;
      put(v, 40, 8, new_shoff);
      if (last) put(v, new_shoff + 64 * last + 32, 8, get(v, new_shoff + 64 * last + 32, 8) + sp.v);
      break;
    }
    case SPLICE_FOREIGN: {
      if (sp.a < es.size() && sp.b < g_entries[(int)sp.v].size()) es[sp.a] = entry_bytes((int)sp.v, sp.b);
      v = with_entries(sp.image, es);
      break;
    }
    case SWAP_ENTRIES:
      if (sp.b < es.size()) std::swap(es[sp.a], es[sp.b]);
      v = with_entries(sp.image, es);
      break;
    case DUP_ENTRY:
      if (sp.a < es.size()) es.insert(es.begin() + sp.a, es[sp.a]);
      v = with_entries(sp.image, es);
      break;
    case SWAP_PAYLOADS: {
      // Each entry keeps its header but gets the other's payload (the sizes follow).
      if (sp.b < es.size()) {
        const Entry &ea = g_entries[sp.image][sp.a], &eb = g_entries[sp.image][sp.b];
        std::vector<char> a(es[sp.a].begin(), es[sp.a].begin() + ea.hs), b(es[sp.b].begin(), es[sp.b].begin() + eb.hs);
        a.insert(a.end(), es[sp.b].begin() + eb.hs, es[sp.b].end());
        b.insert(b.end(), es[sp.a].begin() + ea.hs, es[sp.a].end());
        put(a, 8, 8, a.size() - ea.hs);
        put(b, 8, 8, b.size() - eb.hs);
        es[sp.a] = a;
        es[sp.b] = b;
      }
      v = with_entries(sp.image, es);
      break;
    }
    case PTX_BYTE: v[sp.a] = (char)sp.v; break;
    case PTX_NO_NUL:
      for (size_t q = sp.a; q < sp.a + sp.b && q < v.size(); ++q)
        if (v[q] == 0) v[q] = ' ';
      break;
    case PTX_EARLY_NUL: v[sp.a] = 0; break;
    case NAME_SET: put(v, sp.a, (int)sp.b, sp.v); break;
    case PTX_DIRECTIVE: {
      const std::string text(v.begin() + sp.a, v.begin() + std::min(v.size(), sp.a + sp.b));
      const size_t at = text.find(sp.v ? ".target sm_" : ".version ");
      if (at != std::string::npos) {
        const size_t d = sp.a + at + (sp.v ? 11 : 9);
        if (d + 2 < v.size()) { v[d] = '9'; v[d + 1] = '9'; v[d + 2] = '9'; }
      }
      break;
    }
  }
  return v;
}

static std::vector<char> structured_mutant(int i) {
  const Mutation &m = planned(i);
  std::vector<char> v;
  int image;
  if (m.special >= 0) {
    const Special &sp = g_specials[m.special];
    image = sp.image;
    v = special_mutant(sp);
  } else {
    const Field &f = g_fields[m.field];
    image = f.image;
    v = g_corpus[f.image];
    if (m.flip >= 0) v[m.off] ^= (char)(1u << m.flip);
    else put(v, f.off, f.width, m.value);
  }
  if (!m.wrap) return v;
  std::vector<char> w = wrap_lz4(v, cubin_sm(g_corpus[image]));
  // MUTANTS_COMPANION=fatbin: its entries follow the compressed one, so the GPU has an entry of
  // its own to choose and the mutated entry is one the loader need not pick (does it still read it?).
  static const std::vector<char> companion = std::getenv("MUTANTS_COMPANION") ? read_file(std::getenv("MUTANTS_COMPANION")) : std::vector<char>();
  if (companion.size() > 16) {
    const size_t n = get(companion, 8, 8);
    w.insert(w.end(), companion.begin() + 16, companion.begin() + 16 + std::min(n, companion.size() - 16));
    put(w, 8, 8, w.size() - 16);
  }
  return w;
}

static std::string structured_label(int i) {
  const Mutation &m = planned(i);
  if (m.special >= 0) {
    const Special &sp = g_specials[m.special];
    return "image " + std::to_string(sp.image) + " " + (m.wrap ? "[lz4-wrapped] " : "") + "[" + sp.label + "]";
  }
  return "image " + std::to_string(g_fields[m.field].image) + " " + (m.wrap ? "[lz4-wrapped] " : "") +
         g_fields[m.field].label + (m.flip >= 0 ? " (bit flip)" : "");
}

static bool structured_mode() {
  const char *e = std::getenv("MUTANTS_STRUCTURED");
  return e && std::strcmp(e, "1") == 0;
}

// Mutant i of the two originals: deterministic, so children can rebuild it from its index.
static std::vector<char> random_mutant(const std::vector<char> &cubin, const std::vector<char> &fatbin, int i) {
  std::mt19937_64 g(0x5eed0000ull + i);
  const bool is_fat = i % 2;
  std::vector<char> v = is_fat ? fatbin : cubin;
  const uint64_t lies[] = {0, 1, 0x7fffffffull, 0xffffffffull, 0xffffffffffffffffull, v.size() + 1, v.size() * 2, (uint64_t)1 << 40};
  uint64_t lie = lies[g() % 8];
  switch ((i / 2) % 6) {
    case 0: {  // bit flips
      int flips = 1 + g() % 8;
      for (int k = 0; k < flips; ++k) v[g() % v.size()] ^= (char)(1u << (g() % 8));
      break;
    }
    case 1:  // truncation
      v.resize(g() % v.size());
      break;
    case 2:  // the whole-image size field lies
      if (is_fat) put64(v, 8, lie);            // fatbin header: payload size
      else put64(v, 40, lie);                  // ELF e_shoff
      break;
    case 3:  // section / entry table lies
      if (is_fat) { put32(v, 16 + 4, (uint32_t)lie); put64(v, 16 + 8, lie); }  // first entry: header size, payload size
      else { put16(v, 60, (uint16_t)(g() % 0xffff)); put16(v, 58, (uint16_t)(g() % 256)); }  // e_shnum, e_shentsize
      break;
    case 4: {  // a section header points outside the file
      if (!is_fat && v.size() > 64) {
        uint64_t shoff = 0;
        std::memcpy(&shoff, &v[40], 8);
        uint16_t shnum = 0;
        std::memcpy(&shnum, &v[60], 2);
        if (shnum) {
          size_t sh = shoff + 64 * (g() % shnum);
          put64(v, sh + 24, lie);   // sh_offset
          put64(v, sh + 32, lie);   // sh_size
        }
      } else {
        for (int k = 0; k < 4; ++k) put32(v, g() % (v.size() - 4), (uint32_t)g());
      }
      break;
    }
    default: {  // random bytes spliced over the header
      size_t n = std::min<size_t>(v.size(), 16 + g() % 112);
      for (size_t k = 0; k < n; ++k) v[g() % std::min<size_t>(v.size(), 256)] = (char)g();
      break;
    }
  }
  return v;
}

static std::vector<char> mutant(const std::vector<char> &cubin, const std::vector<char> &fatbin, int i) {
  return structured_mode() ? structured_mutant(i) : random_mutant(cubin, fatbin, i);
}

static int raw_child(const std::vector<char> &cubin, const std::vector<char> &fatbin, int first, int count, const char *progress) {
  CHECK_RT(cudaFree(nullptr));
  auto load = DRIVER(cuLibraryLoadData);
  auto unload = DRIVER(cuLibraryUnload);
  FILE *p = std::fopen(progress, "w");
  for (int i = first; i < count; ++i) {
    std::rewind(p);
    std::fprintf(p, "%d\n", i);
    std::fflush(p);
    auto m = mutant(cubin, fatbin, i);
    Guarded g(m);
    CUlibrary lib = nullptr;
    if (load(&lib, g.data, nullptr, nullptr, 0, nullptr, nullptr, 0) == CUDA_SUCCESS) unload(lib);
  }
  std::fclose(p);
  return 0;
}

// Raw cuLibraryLoadData on the same mutants, in child processes: a crash costs only the child,
// is counted, and a new child resumes after the crashing mutant. The mutants are split into
// MUTANTS_RAW_JOBS contiguous shards (default 8) run side by side, and the pass stops at
// MUTANTS_RAW_SECONDS (default 240): a capped run reports how far it got, not nothing.
static void raw_pass(char **argv, int count) {
  const int jobs = std::max(1, std::getenv("MUTANTS_RAW_JOBS") ? std::atoi(std::getenv("MUTANTS_RAW_JOBS")) : 8);
  const double budget = std::getenv("MUTANTS_RAW_SECONDS") ? std::atof(std::getenv("MUTANTS_RAW_SECONDS")) : 240.0;
  struct Shard { int begin, next, end; pid_t pid; std::string progress; };
  std::vector<Shard> shards;
  for (int j = 0; j < jobs; ++j) {
    int lo = (int)((long)count * j / jobs), hi = (int)((long)count * (j + 1) / jobs);
    shards.push_back({lo, lo, hi, -1, "/tmp/cudyn_mutants_progress_" + std::to_string(getpid()) + "_" + std::to_string(j)});
  }
  auto read_progress = [](const Shard &sh, int fallback) {
    int at = fallback;
    if (FILE *p = std::fopen(sh.progress.c_str(), "r")) { if (std::fscanf(p, "%d", &at) != 1) at = fallback; std::fclose(p); }
    return at;
  };
  auto start = [&](Shard &sh) {
    std::remove(sh.progress.c_str());
    pid_t pid = fork();
    if (pid == 0) {
      execl(argv[0], argv[0], argv[1], argv[2], std::to_string(sh.end).c_str(), "--raw-child", std::to_string(sh.next).c_str(), sh.progress.c_str(), (char *)nullptr);
      _exit(127);
    }
    sh.pid = pid;
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  int crashes = 0, children = 0, running = 0;
  std::map<int, int> signals;
  std::vector<int> crashed_at;
  for (auto &sh : shards) if (sh.next < sh.end) { start(sh); children++; running++; }
  bool capped = false;
  while (running > 0) {
    int st = 0;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid == 0) {
      if (elapsed() > budget) {  // out of time: stop every child where it is
        capped = true;
        for (auto &sh : shards) if (sh.pid > 0) kill(sh.pid, SIGKILL);
        for (auto &sh : shards) if (sh.pid > 0) { waitpid(sh.pid, &st, 0); sh.next = read_progress(sh, sh.next); sh.pid = -1; running--; }
        break;
      }
      usleep(20000);
      continue;
    }
    if (pid < 0) break;
    Shard *sh = nullptr;
    for (auto &x : shards) if (x.pid == pid) sh = &x;
    if (!sh) continue;
    sh->pid = -1;
    running--;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) { sh->next = sh->end; continue; }
    int at = read_progress(*sh, sh->next);
    crashes++;
    crashed_at.push_back(at);
    signals[WIFSIGNALED(st) ? WTERMSIG(st) : -WEXITSTATUS(st)]++;
    sh->next = at + 1;
    if (sh->next < sh->end) { start(*sh); children++; running++; }
  }
  int covered = 0;
  for (auto &sh : shards) {
    covered += sh.next - sh.begin;
    std::remove(sh.progress.c_str());
  }
  std::sort(crashed_at.begin(), crashed_at.end());
  std::printf("raw cuLibraryLoadData: %d of %d mutants tried in %.0f s%s (%d shards, %d child processes): %d crashed the process",
              covered, count, elapsed(), capped ? ", stopped at the time cap" : "", jobs, children, crashes);
  for (auto &kv : signals) std::printf("; %s %d: %d", kv.first > 0 ? "signal" : "exit", kv.first > 0 ? kv.first : -kv.first, kv.second);
  std::printf("\n");
  static const char *kinds[] = {"bit flips", "truncation", "size field lies", "table lies", "section outside", "header noise"};
  std::map<std::string, int> by_kind;
  for (int i : crashed_at)
    by_kind[structured_mode() ? structured_label(i) : std::string(i % 2 ? "fatbin " : "cubin ") + kinds[(i / 2) % 6]]++;
  for (auto &kv : by_kind) std::printf("  raw crashes, %s: %d\n", kv.first.c_str(), kv.second);
  std::printf("  first crashing mutants:");
  for (size_t j = 0; j < crashed_at.size() && j < 40; ++j) std::printf(" %d", crashed_at[j]);
  std::printf("\n");
}

int main(int argc, char **argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a run stopped from outside keeps what it printed
  if (argc < 3) FAIL("usage: %s <cubin> <fatbin> [count] [--raw]", argv[0]);
  auto cubin = read_file(argv[1]);
  auto fatbin = read_file(argv[2]);
  int count = argc > 3 ? std::atoi(argv[3]) : 10000;
  if (structured_mode()) {
    build_plan(cubin, fatbin);
    if (count <= 0 || count > (int)g_plan.size()) count = (int)g_plan.size();
    g_count = count;
  }
  if (argc > 4 && std::strcmp(argv[4], "--plan-size") == 0) {  // how many mutants `count` means
    std::printf("%d\n", count);
    return 0;
  }
  if (argc > 6 && std::strcmp(argv[4], "--dump") == 0) {  // write mutant argv[5] to argv[6]
    auto m = mutant(cubin, fatbin, std::atoi(argv[5]));
    FILE *f = std::fopen(argv[6], "wb");
    std::fwrite(m.data(), 1, m.size(), f);
    std::fclose(f);
    return 0;
  }
  if (argc > 5 && std::strcmp(argv[4], "--label") == 0) {  // what mutants argv[5..] change
    for (int a = 5; a < argc; ++a) {
      int i = std::atoi(argv[a]);
      std::printf("%d %s\n", i, structured_mode() ? structured_label(i).c_str() : "(random mutant)");
    }
    return 0;
  }
  if (argc > 6 && std::strcmp(argv[4], "--raw-child") == 0) return raw_child(cubin, fatbin, std::atoi(argv[5]), count, argv[6]);
  const bool raw_only = argc > 4 && std::strcmp(argv[4], "--raw-only") == 0;
  const bool raw = raw_only || (argc > 4 && std::strcmp(argv[4], "--raw") == 0);
  // --validate-only: no GPU needed; every mutant still goes through cudyn's checks (which end
  // in DRIVER_NOT_FOUND / NO_DEVICE where an image passes them).
  const bool cpu = argc > 4 && std::strcmp(argv[4], "--validate-only") == 0;
  if (!cpu) require_gpu();

  std::map<std::string, int> by_status[2];
  // The statuses of preloading what cudyn accepted, per API (on a GPU, unless MUTANTS_PRELOAD=0).
  std::map<std::string, int> by_preload[2];
  const char *preload_env = std::getenv("MUTANTS_PRELOAD");
  const bool preload = !cpu && !(preload_env && std::strcmp(preload_env, "0") == 0);
  // Structured mode: statuses per structure and field (both APIs together).
  std::map<std::string, std::map<std::string, int>> by_field;
  // MUTANTS_TRACE=file records the mutant in flight (to find one that crashes);
  // MUTANTS_FROM=n starts there.
  FILE *trace = std::getenv("MUTANTS_TRACE") ? std::fopen(std::getenv("MUTANTS_TRACE"), "w") : nullptr;
  const int from = std::getenv("MUTANTS_FROM") ? std::atoi(std::getenv("MUTANTS_FROM")) : 0;
  // MUTANTS_VERDICTS=file writes one line per mutant per API: index, API, status, message, so
  // two builds of cudyn can be compared verdict for verdict (diff the files).
  FILE *verdicts = std::getenv("MUTANTS_VERDICTS") ? std::fopen(std::getenv("MUTANTS_VERDICTS"), "w") : nullptr;
  if (std::getenv("MUTANTS_VERDICTS") && !verdicts) FAIL("cannot write %s", std::getenv("MUTANTS_VERDICTS"));
  // MUTANTS_TO=n stops before mutant n (a shard of a parallel run).
  const int to = std::getenv("MUTANTS_TO") ? std::min(count, std::atoi(std::getenv("MUTANTS_TO"))) : count;
  for (int i = from; i < (raw_only ? 0 : to); ++i) {
    if (trace) { std::rewind(trace); std::fprintf(trace, "%d\n", i); std::fflush(trace); }
    auto m = mutant(cubin, fatbin, i);
    Guarded g(m);
    for (int a = 0; a < 2; ++a) {
      cudyn_api api = a ? CUDYN_API_DRIVER : CUDYN_API_RUNTIME;
      cudyn_library_t lib = nullptr;
      cudyn_status s = cudyn_library_load_data(g.data, m.size(), api, &lib);
      by_status[a][cudyn_status_string(s)]++;
      if (structured_mode()) {
        std::string name = cudyn_status_string(s);
        by_field[structured_label(i)][name.substr(0, name.find(':'))]++;
      }
      if (verdicts) {
        const char *msg = s == CUDYN_SUCCESS ? "" : cudyn_last_error_message();
        std::fprintf(verdicts, "%d %s %s ", i, a ? "driver" : "runtime", cudyn_status_string(s));
        for (const char *c = msg ? msg : "(null)"; *c; ++c) {  // one line per verdict
          if (*c == '\n') std::fputs("\\n", verdicts);
          else std::fputc(*c, verdicts);
        }
        std::fputc('\n', verdicts);
      }
      if (s == CUDYN_SUCCESS && preload) {
        const int device = 0;
        by_preload[a][cudyn_status_string(cudyn_library_preload(lib, &device, 1, nullptr))]++;
      }
      if (s == CUDYN_SUCCESS) CHECK_CUDYN(cudyn_library_unload(lib, api));
    }
  }
  if (verdicts) std::fclose(verdicts);
  if (!raw_only) {
    if (structured_mode()) {
      std::printf("cudyn, structured: mutants %d to %d of %d, %zu images (%zu fields) x 2 APIs, 0 crashes\n", from, to - 1, count, g_corpus.size(), g_fields.size());
      std::printf("  per image, structure and field (both APIs):\n");
      for (auto &f : by_field) {
        std::printf("    %-70s", f.first.c_str());
        for (auto &kv : f.second) std::printf("  %s %d", kv.first.c_str(), kv.second);
        std::printf("\n");
      }
    } else {
      std::printf("cudyn: %d mutants (cubin and fatbin, alternating) x 2 APIs, 0 crashes\n", count);
    }
    for (int a = 0; a < 2; ++a) {
      std::printf("  through the %s:\n", a ? "driver" : "runtime");
      for (auto &kv : by_status[a]) std::printf("    %6d  %s\n", kv.second, kv.first.c_str());
      if (preload) {
        std::printf("  accepted through the %s, then preloaded on device 0:\n", a ? "driver" : "runtime");
        for (auto &kv : by_preload[a]) std::printf("    %6d  %s\n", kv.second, kv.first.c_str());
      }
    }
    if (cpu) return 0;
    // After all that, the GPU still works: a clean load and launch.
    cudyn_library_t lib;
    CHECK_CUDYN(cudyn_library_load_data(fatbin.data(), fatbin.size(), CUDYN_API_DRIVER, &lib));
    cudyn_kernel_t k;
    CHECK_CUDYN(cudyn_library_get_kernel(lib, "add_one", CUDYN_API_DRIVER, &k));
    DevBuf d(std::vector<float>(1024, 1.0f));
    int n = 1024;
    void *args[] = {&d.p, &n};
    cudyn_launch_config cfg = config_1d(n, 256, CUDYN_API_RUNTIME);
    CHECK_CUDYN(cudyn_launch(k, &cfg, args, 2));
    CHECK_RT(cudaDeviceSynchronize());
    EXPECT(d.get()[1023] == 2.0f, "GPU unusable after the mutants");
    CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_DRIVER));
    std::printf("  afterwards: a clean load + launch works\n");
  }
  if (raw) raw_pass(argv, count);
  return 0;
}
