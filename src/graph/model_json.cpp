#include "graph/model_json.hpp"

#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "graph/json.hpp"

namespace dpt {

namespace {

constexpr const char *kFormat = "dptrain.model";
constexpr int64_t kVersion = 1;
constexpr size_t kMaxNodes = 65536;

using json::Value;

std::string line_of(const Value &v) {
  return "line " + std::to_string(v.line) + ", column " + std::to_string(v.column) + ": ";
}

[[noreturn]] void fail(const Value &v, const std::string &what, const std::string &problem) {
  throw_error(DPT_ERROR_FORMAT, line_of(v) + what + ": " + problem);
}

std::string quoted(std::string_view text) {
  std::string out;
  json::append_string(out, text.substr(0, 64));
  return out;
}

const Value &require(const Value &object, const char *key, Value::Kind kind, const std::string &what) {
  const Value *v = object.find(key);
  if (v == nullptr) fail(object, what, std::string("missing \"") + key + "\"");
  if (v->kind != kind) {
    Value expected;
    expected.kind = kind;
    fail(*v, what + " \"" + key + "\"",
         std::string("expected ") + expected.kind_name() + ", got " + v->kind_name());
  }
  return *v;
}

// A size or a tensor id: a non-negative integer.
size_t to_size(const Value &v, const std::string &what) {
  const int64_t n = json::to_int64(v, what);
  if (n < 0) fail(v, what, "expected a non-negative integer, got " + v.text);
  return size_t(n);
}

Shape input_shape(const Value &doc) {
  const Value &input = require(doc, "input", Value::Kind::kArray, "the model");
  if (input.items.empty() || input.items.size() > kMaxRank)
    fail(input, "\"input\"",
         "expected 1 to " + std::to_string(kMaxRank) + " dimensions, got " +
             std::to_string(input.items.size()));
  size_t d[kMaxRank] = {};
  for (size_t i = 0; i < input.items.size(); ++i)
    d[i] = to_size(input.items[i], "\"input\"[" + std::to_string(i) + "]");
  switch (input.items.size()) {
    case 1:
      return Shape{d[0]};
    case 2:
      return Shape{d[0], d[1]};
    case 3:
      return Shape{d[0], d[1], d[2]};
    default:
      return Shape{d[0], d[1], d[2], d[3]};
  }
}

bool is_attribute(const OpDef &op, std::string_view key) {
  for (size_t i = 0; i < op.int_count(); ++i)
    if (key == op.int_names[i]) return true;
  for (size_t i = 0; i < op.real_count(); ++i)
    if (key == op.real_names[i]) return true;
  return false;
}

std::string accepted_keys(const OpDef &op) {
  std::string keys = "op, name, inputs";
  for (size_t i = 0; i < op.int_count(); ++i) keys += std::string(", ") + op.int_names[i];
  for (size_t i = 0; i < op.real_count(); ++i) keys += std::string(", ") + op.real_names[i];
  return keys;
}

void add_node(ModelSpec &spec, const Value &node, size_t index) {
  std::string what = "nodes[" + std::to_string(index) + "]";
  if (node.kind != Value::Kind::kObject)
    fail(node, what, std::string("expected an object, got ") + node.kind_name());
  const Value &op_name = require(node, "op", Value::Kind::kString, what);
  const OpDef *op = find_op_def(op_name.text);
  if (op == nullptr) fail(op_name, what + " \"op\"", "unknown op " + quoted(op_name.text));
  std::string name;
  if (const Value *n = node.find("name")) {
    if (n->kind != Value::Kind::kString)
      fail(*n, what + " \"name\"", std::string("expected a string, got ") + n->kind_name());
    name = n->text;
  }
  what += " (" + std::string(op->name) + (node.find("name") ? " " + quoted(name) : std::string()) + ")";
  for (const json::Member &m : node.members)
    if (m.key != "op" && m.key != "name" && m.key != "inputs" && !is_attribute(*op, m.key))
      fail(m.value, what,
           "unknown key " + quoted(m.key) + " (" + op->name + " takes " + accepted_keys(*op) + ")");
  const Value &inputs = require(node, "inputs", Value::Kind::kArray, what);
  std::vector<size_t> ids;
  for (size_t i = 0; i < inputs.items.size(); ++i)
    ids.push_back(to_size(inputs.items[i], what + " \"inputs\"[" + std::to_string(i) + "]"));
  OpAttrs attrs;
  for (size_t i = 0; i < op->int_count(); ++i)
    attrs.ints[i] = json::to_int64(require(node, op->int_names[i], Value::Kind::kNumber, what),
                                   what + " \"" + op->int_names[i] + "\"");
  for (size_t i = 0; i < op->real_count(); ++i)
    attrs.reals[i] = json::to_double(require(node, op->real_names[i], Value::Kind::kNumber, what),
                                     what + " \"" + op->real_names[i] + "\"");
  if (node.find("name") != nullptr && name.empty())
    throw_error(DPT_ERROR_INVALID_ARGUMENT,
                line_of(node) + what + ": an empty name (leave \"name\" out for the node's index)");
  try {
    spec.add(*op, ids, attrs, name);
  } catch (const Error &e) {
    throw Error(e.status(), line_of(node) + what + ": " + e.what());
  }
}

// "ties": [{"parameter": "lm_head.weight", "source": "transformer.wte.weight"}, ...], in order.
void add_ties(ModelSpec &spec, const Value &ties) {
  if (ties.kind != Value::Kind::kArray)
    fail(ties, "\"ties\"", std::string("expected an array, got ") + ties.kind_name());
  for (size_t i = 0; i < ties.items.size(); ++i) {
    const Value &tie = ties.items[i];
    const std::string what = "ties[" + std::to_string(i) + "]";
    if (tie.kind != Value::Kind::kObject)
      fail(tie, what, std::string("expected an object, got ") + tie.kind_name());
    for (const json::Member &m : tie.members)
      if (m.key != "parameter" && m.key != "source")
        fail(m.value, what, "unknown key " + quoted(m.key) + " (a tie has parameter and source)");
    const Value &parameter = require(tie, "parameter", Value::Kind::kString, what);
    const Value &source = require(tie, "source", Value::Kind::kString, what);
    try {
      spec.tie(parameter.text, source.text);
    } catch (const Error &e) {
      throw Error(e.status(), line_of(tie) + what + ": " + e.what());
    }
  }
}

}  // namespace

std::string model_to_json(const ModelSpec &spec) {
  std::string out = "{\n  \"format\": \"";
  out += kFormat;
  out += "\",\n  \"version\": " + std::to_string(kVersion) + ",\n  \"input\": [";
  const Shape &input = spec.input();
  for (size_t i = 0; i < input.rank(); ++i) out += (i ? ", " : "") + std::to_string(input[i]);
  out += ']';
  // Written only for tokens: a float32 model's file is as version 0.1 wrote it.
  if (spec.input_dtype() == DType::kI32) out += ",\n  \"input_dtype\": \"int32\"";
  out += ",\n  \"nodes\": [";
  const std::vector<Node> &nodes = spec.nodes();
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node &node = nodes[n];
    out += n ? ",\n    {\"op\": " : "\n    {\"op\": ";
    json::append_string(out, node.op->name);
    out += ", \"name\": ";
    json::append_string(out, node.name);
    out += ", \"inputs\": [";
    for (size_t i = 0; i < node.inputs.size(); ++i) out += (i ? ", " : "") + std::to_string(node.inputs[i]);
    out += ']';
    for (size_t i = 0; i < node.op->int_count(); ++i) {
      out += ", ";
      json::append_string(out, node.op->int_names[i]);
      out += ": " + std::to_string(node.attrs.ints[i]);
    }
    for (size_t i = 0; i < node.op->real_count(); ++i) {
      out += ", ";
      json::append_string(out, node.op->real_names[i]);
      out += ": ";
      json::append_double(out, node.attrs.reals[i]);
    }
    out += '}';
  }
  out += nodes.empty() ? "],\n" : "\n  ],\n";
  out += "  \"output\": " + std::to_string(spec.output_tensor());
  // Written only when there are ties: an untied model's file is as version 0.2 wrote it.
  if (!spec.ties().empty()) {
    out += ",\n  \"ties\": [";
    for (size_t i = 0; i < spec.ties().size(); ++i) {
      out += i ? ",\n    {\"parameter\": " : "\n    {\"parameter\": ";
      json::append_string(out, spec.ties()[i].parameter);
      out += ", \"source\": ";
      json::append_string(out, spec.ties()[i].source);
      out += '}';
    }
    out += "\n  ]";
  }
  out += "\n}\n";
  return out;
}

ModelSpec model_from_json(std::string_view text) {
  const Value doc = json::parse(text);
  if (doc.kind != Value::Kind::kObject)
    fail(doc, "the model", std::string("expected an object, got ") + doc.kind_name());
  const Value &format = require(doc, "format", Value::Kind::kString, "the model");
  if (format.text != kFormat)
    fail(format, "\"format\"", "expected \"" + std::string(kFormat) + "\", got " + quoted(format.text));
  const Value &version = require(doc, "version", Value::Kind::kNumber, "the model");
  if (json::to_int64(version, "\"version\"") != kVersion)
    fail(version, "\"version\"",
         "version " + version.text + " is not supported (this library reads version " +
             std::to_string(kVersion) + ")");
  for (const json::Member &m : doc.members)
    if (m.key != "format" && m.key != "version" && m.key != "input" && m.key != "input_dtype" &&
        m.key != "nodes" && m.key != "output" && m.key != "ties")
      fail(m.value, "the model",
           "unknown key " + quoted(m.key) +
               " (expected format, version, input, input_dtype, nodes, output, ties)");
  const Shape shape = input_shape(doc);
  DType dtype = DType::kF32;
  if (const Value *d = doc.find("input_dtype")) {
    if (d->kind != Value::Kind::kString || (d->text != "float32" && d->text != "int32"))
      fail(*d, "\"input_dtype\"", "expected \"float32\" or \"int32\"");
    if (d->text == "int32") dtype = DType::kI32;
  }
  const Value &nodes = require(doc, "nodes", Value::Kind::kArray, "the model");
  if (nodes.items.size() > kMaxNodes)
    fail(nodes, "\"nodes\"", "more than " + std::to_string(kMaxNodes) + " nodes");
  ModelSpec spec = [&] {
    try {
      return ModelSpec(shape, dtype);
    } catch (const Error &e) {
      throw Error(e.status(), line_of(*doc.find("input")) + "\"input\": " + e.what());
    }
  }();
  for (size_t i = 0; i < nodes.items.size(); ++i) add_node(spec, nodes.items[i], i);
  if (const Value *output = doc.find("output")) {
    const size_t t = to_size(*output, "\"output\"");
    try {
      spec.set_output(t);
    } catch (const Error &e) {
      throw Error(e.status(), line_of(*output) + "\"output\": " + e.what());
    }
  }
  if (const Value *ties = doc.find("ties")) add_ties(spec, *ties);
  return spec;
}

}  // namespace dpt
