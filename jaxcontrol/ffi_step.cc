// The C backend's control step as an XLA FFI handler: no Python runs per step.
//
// One Engine per (Env, set of per-environment model fields) owns an mjBatch (MuJoCo's
// batched simulation, the C API under mujoco.batch). A call writes every environment's
// state row and model fields, then runs one function per simulation on the batch's
// threads (mjb_apply): dm_control's Physics.step (n_sub_steps mj_steps, sensors only on
// the last, then mj_step1's stages at the new state) and a copy of the outputs. The new
// state, sensors and poses go into XLA's result buffers: the same bits as
// jaxcontrol.cpu_physics's callback.
//
// The lean end stage. mj_step1's collision, constraints, inertia and bias forces feed
// only the next step's dynamics, and the next call recomputes them from the state JAX
// passes back. So where every output and every position- or velocity-stage sensor is
// computed by the functions in LeanStage, the end stage runs only those (in mj_step1's
// order, so the outputs are its bits); elsewhere it runs mj_step1 whole.
//
// Built on first use by jaxcontrol/ffi_step.py against the installed mujoco wheel's
// headers and library and jaxlib's FFI headers.

#include <mujoco/mjbatch.h>
#include <mujoco/mjxmacro.h>
#include <mujoco/mujoco.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// The state a step reads, in operand order; the first five are also its results.
const int kStateBits[] = {mjSTATE_TIME,      mjSTATE_QPOS, mjSTATE_QVEL,
                          mjSTATE_ACT,       mjSTATE_WARMSTART, mjSTATE_CTRL,
                          mjSTATE_QFRC_APPLIED, mjSTATE_XFRC_APPLIED};
constexpr int kNumState = 8;
constexpr int kNumStateOut = 5;

struct Field {       // a model field with a value per environment
  std::string name;
  char type;         // 'd' mjtNum, 'f' float, 'i' int, 'B' unsigned char
  void* storage = nullptr;
  int size = 0;
};

struct Output {      // an mjData field copied out after each call
  std::string name;
  mjtNum* (*get)(mjData*) = nullptr;
  std::vector<mjtNum> storage;  // (nsim, size)
  int size = 0;
};

// The mjtNum array of mjData named `name`, and its size for model m; false if none.
bool FindDataField(const mjModel* m, const std::string& name, mjtNum* (**get)(mjData*),
                   int* size) {
#define X(type, field, nr, nc)                                                   \
  if (name == #field && sizeof(type) == sizeof(mjtNum)) {                       \
    *get = [](mjData* d) { return reinterpret_cast<mjtNum*>(d->field); };        \
    *size = static_cast<int>(m->nr * (nc));                                     \
    return true;                                                                 \
  }
  MJDATA_POINTERS
#undef X
  return false;
}

// The outputs the lean end stage computes (mj_kinematics, mj_comPos, mj_comVel, sensors).
bool LeanOutput(const std::string& name) {
  for (const char* lean : {"sensordata", "xanchor", "xaxis", "xpos", "xquat", "xmat", "xipos",
                           "ximat", "geom_xpos", "geom_xmat", "site_xpos", "site_xmat",
                           "subtree_com", "cinert", "cdof", "cvel", "cdof_dot", "cam_xpos",
                           "cam_xmat", "ten_length", "actuator_length", "subtree_linvel",
                           "subtree_angmom"})
    if (name == lean) return true;
  return false;
}

// Position- and velocity-stage sensors whose inputs the lean end stage computes; others
// (joint and tendon limits read constraint rows, tendon and actuator velocities come from
// mj_fwdVelocity, user and plugin sensors are unknown) need mj_step1 whole.
bool LeanSensor(int type) {
  switch (type) {
    case mjSENS_MAGNETOMETER: case mjSENS_RANGEFINDER: case mjSENS_JOINTPOS:
    case mjSENS_TENDONPOS: case mjSENS_ACTUATORPOS: case mjSENS_BALLQUAT:
    case mjSENS_FRAMEPOS: case mjSENS_FRAMEQUAT: case mjSENS_FRAMEXAXIS:
    case mjSENS_FRAMEYAXIS: case mjSENS_FRAMEZAXIS: case mjSENS_SUBTREECOM:
    case mjSENS_CLOCK: case mjSENS_VELOCIMETER: case mjSENS_GYRO: case mjSENS_JOINTVEL:
    case mjSENS_BALLANGVEL: case mjSENS_FRAMELINVEL: case mjSENS_FRAMEANGVEL:
    case mjSENS_SUBTREELINVEL: case mjSENS_SUBTREEANGMOM:
      return true;
    default:
      return false;
  }
}

// Whether the lean end stage gives m's `outputs` as mj_step1 would (file comment).
bool LeanApplies(const mjModel* m, const std::vector<std::string>& outputs) {
  for (const std::string& name : outputs)
    if (!LeanOutput(name)) return false;
  for (int i = 0; i < m->nsensor; i++) {
    const int type = m->sensor_type[i];
    if (type == mjSENS_USER || type == mjSENS_PLUGIN) return false;
    if (m->sensor_needstage[i] != mjSTAGE_ACC && !LeanSensor(type)) return false;
  }
  for (int i = 0; i < m->nu; i++)
    if (m->actuator_trntype[i] == mjTRN_BODY) return false;  // adhesion reads contacts
  return m->nflex == 0 && m->nplugin == 0;
}

// mj_step1 without what only the next step's dynamics read: the functions of its
// position and velocity stages that compute poses, centres of mass, tendon and
// actuator lengths and the sensors, in its order. The lazy-evaluation flags are
// cleared as its stages clear them, so that sensors recompute subtree velocities.
void LeanStage(const mjModel* m, mjData* d) {
  mj_checkPos(m, d);
  mj_checkVel(m, d);
  d->flg_energypos = 0;
  d->flg_rnepost = 0;
  mj_kinematics(m, d);
  mj_comPos(m, d);
  mj_camlight(m, d);
  mj_tendon(m, d);
  mj_transmission(m, d);
  mj_sensorPos(m, d);
  d->flg_subtreevel = 0;
  d->flg_energyvel = 0;
  mj_comVel(m, d);
  mj_sensorVel(m, d);
}

struct Engine {
  const mjModel* model;  // the caller's, kept alive by it
  int n_sub_steps, substep_sensors, nthread, flags;
  std::vector<Field> fields;
  std::vector<Output> outputs;
  bool lean = false;     // the end stage is LeanStage, not mj_step1
  mjBatch* batch = nullptr;
  int nsim = 0, nstate = 0;
  mjtNum* state[kNumState] = {};
  int state_size[kNumState] = {};
  int* disableflags = nullptr;
  std::mutex mutex;  // a batch takes one call at a time

  ~Engine() {
    if (batch) mjb_deleteBatch(batch);
  }

  // A batch of at least n simulations, with the fields expanded and outputs bound.
  std::string Reserve(int n) {
    if (batch && nsim >= n) return "";
    if (batch) mjb_deleteBatch(batch);
    batch = nullptr;
    mjBatchConfig config;
    mjb_defaultConfig(&config);
    config.nthread = nthread;
    char error[1000] = "";
    batch = mjb_makeBatch(model, n, &config, error, sizeof(error));
    if (!batch) return std::string("mjb_makeBatch: ") + error;
    nsim = n;
    nstate = mjb_nstate(batch);
    for (int i = 0; i < kNumState; i++) {
      state[i] = mjb_stateComponent(batch, kStateBits[i], &state_size[i]);
    }
    int size, elemsize;
    disableflags = static_cast<int*>(mjb_expand(batch, "opt.disableflags", &size, &elemsize));
    if (!disableflags) return "opt.disableflags cannot be expanded";
    for (Field& f : fields) {
      f.storage = mjb_expand(batch, f.name.c_str(), &f.size, &elemsize);
      if (!f.storage) return "model field " + f.name + " cannot be expanded";
    }
    for (Output& o : outputs) {
      if (!FindDataField(model, o.name, &o.get, &o.size))
        return "data field " + o.name + " is not an mjtNum array of mjData";
      o.storage.assign((size_t)n * o.size, 0);
    }
    return "";
  }
};

// One control step of simulation `sim`, run by mjb_apply on a batch thread: m is that
// thread's model (opt.disableflags is expanded, so it is not the batch's shared copy).
void StepOne(const mjModel* model, mjData* d, int sim, void* arg) {
  Engine* e = static_cast<Engine*>(arg);
  if (model == mjb_model(e->batch)) mju_error("jaxcontrol: expected a per-thread model");
  mjModel* m = const_cast<mjModel*>(model);
  const int flags = m->opt.disableflags;
  // Sensors feed nothing back: the substeps before the last skip them.
  const int last = e->substep_sensors ? e->n_sub_steps : 1;
  m->opt.disableflags = flags | mjDSBL_SENSOR;
  for (int k = last; k < e->n_sub_steps; k++) mj_step(m, d);
  m->opt.disableflags = flags;
  for (int k = 0; k < last; k++) mj_step(m, d);
  if (e->lean)
    LeanStage(m, d);
  else
    mj_step1(m, d);
  for (Output& o : e->outputs)
    std::memcpy(o.storage.data() + (size_t)sim * o.size, o.get(d), sizeof(mjtNum) * o.size);
}

template <typename T>
void ReadRows(const T* src, int n, int width, mjtNum* rows, int stride) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < width; j++) rows[(int64_t)i * stride + j] = src[(int64_t)i * width + j];
}

template <typename T>
void WriteRows(const mjtNum* rows, int n, int width, int stride, const std::vector<char>& invalid,
               bool nan_invalid, T* dst) {
  for (int i = 0; i < n; i++) {
    const bool blank = nan_invalid && invalid[i];
    for (int j = 0; j < width; j++)
      dst[(int64_t)i * width + j] = blank ? T(NAN) : T(rows[(int64_t)i * stride + j]);
  }
}

template <typename To, typename From>
void Convert(const From* src, int64_t count, To* dst) {
  for (int64_t k = 0; k < count; k++) dst[k] = static_cast<To>(src[k]);
}

// An operand (float32 or float64) into n rows of width values, rows `stride` apart.
ffi::Error Read(const ffi::AnyBuffer& buf, int n, int width, mjtNum* rows, int stride,
                const std::string& what) {
  if (buf.element_count() != (size_t)n * width)
    return ffi::Error::InvalidArgument(what + ": wrong size");
  if (buf.element_type() == ffi::DataType::F64)
    ReadRows(static_cast<const double*>(buf.untyped_data()), n, width, rows, stride);
  else if (buf.element_type() == ffi::DataType::F32)
    ReadRows(static_cast<const float*>(buf.untyped_data()), n, width, rows, stride);
  else
    return ffi::Error::InvalidArgument(what + ": expected float32 or float64");
  return ffi::Error::Success();
}

ffi::Error Write(const mjtNum* rows, int n, int width, int stride, const std::vector<char>& invalid,
                 bool nan_invalid, ffi::Result<ffi::AnyBuffer>& out, const std::string& what) {
  if (out->element_count() != (size_t)n * width)
    return ffi::Error::InvalidArgument(what + ": wrong result size");
  if (out->element_type() == ffi::DataType::F64)
    WriteRows(rows, n, width, stride, invalid, nan_invalid, static_cast<double*>(out->untyped_data()));
  else if (out->element_type() == ffi::DataType::F32)
    WriteRows(rows, n, width, stride, invalid, nan_invalid, static_cast<float*>(out->untyped_data()));
  else
    return ffi::Error::InvalidArgument(what + ": expected float32 or float64");
  return ffi::Error::Success();
}

// An operand's values into an expanded model field of any type.
template <typename From>
void Expand(const From* src, int64_t count, const Field& f) {
  switch (f.type) {
    case 'd': Convert(src, count, static_cast<mjtNum*>(f.storage)); break;
    case 'f': Convert(src, count, static_cast<float*>(f.storage)); break;
    case 'i': Convert(src, count, static_cast<int*>(f.storage)); break;
    default: Convert(src, count, static_cast<unsigned char*>(f.storage)); break;
  }
}

ffi::Error Failed(Engine* e, int n) {
  const int* status = mjb_status(e->batch);
  for (int i = 0; i < n; i++) {
    if (status[i]) {
      std::ostringstream message;
      message << "MuJoCo raised in simulation " << i << ": " << mjb_error(e->batch, i);
      return ffi::Error::Internal(message.str());
    }
  }
  return ffi::Error::Internal("MuJoCo raised in a simulation");
}

ffi::Error Step(int64_t handle, ffi::RemainingArgs args, ffi::RemainingRets rets) {
  Engine* e = reinterpret_cast<Engine*>(handle);
  std::lock_guard<std::mutex> lock(e->mutex);
  if (args.size() != kNumState + e->fields.size())
    return ffi::Error::InvalidArgument("wrong number of operands");
  if (rets.size() != kNumStateOut + e->outputs.size())
    return ffi::Error::InvalidArgument("wrong number of results");
  auto time = args.get<ffi::AnyBuffer>(0);
  if (time.has_error()) return time.error();
  const int n = static_cast<int>(time->element_count());
  std::string reserved = e->Reserve(n);
  if (!reserved.empty()) return ffi::Error::Internal(reserved);

  for (int i = 0; i < kNumState; i++) {
    auto buf = args.get<ffi::AnyBuffer>(i);
    if (buf.has_error()) return buf.error();
    if (ffi::Error err = Read(*buf, n, e->state_size[i], e->state[i], e->nstate, "state");
        err.failure())
      return err;
  }
  for (size_t k = 0; k < e->fields.size(); k++) {
    const Field& f = e->fields[k];
    auto buf = args.get<ffi::AnyBuffer>(kNumState + k);
    if (buf.has_error()) return buf.error();
    if (buf->element_count() != (size_t)n * f.size)
      return ffi::Error::InvalidArgument("model field " + f.name + ": wrong size");
    if (buf->element_type() == ffi::DataType::F64)
      Expand(static_cast<const double*>(buf->untyped_data()), (int64_t)n * f.size, f);
    else if (buf->element_type() == ffi::DataType::F32)
      Expand(static_cast<const float*>(buf->untyped_data()), (int64_t)n * f.size, f);
    else if (buf->element_type() == ffi::DataType::S32)
      Expand(static_cast<const int32_t*>(buf->untyped_data()), (int64_t)n * f.size, f);
    else if (buf->element_type() == ffi::DataType::S64)
      Expand(static_cast<const int64_t*>(buf->untyped_data()), (int64_t)n * f.size, f);
    else
      return ffi::Error::InvalidArgument("model field " + f.name + ": unsupported dtype");
  }

  std::vector<int> ids;
  const int* id_ptr = nullptr;
  if (n != e->nsim) {
    ids.resize(n);
    for (int i = 0; i < n; i++) ids[i] = i;
    id_ptr = ids.data();
  }
  mjWarningStat* warning = mjb_warning(e->batch);
  std::memset(warning, 0, sizeof(mjWarningStat) * mjNWARNING * (size_t)n);

  for (int i = 0; i < n; i++) e->disableflags[i] = e->flags;
  if (mjb_apply(e->batch, id_ptr, n, StepOne, e, 1)) return Failed(e, n);

  // MuJoCo's bad qpos/qvel/qacc warnings: C reset that simulation (dm_control raises).
  std::vector<char> invalid(n);
  for (int i = 0; i < n; i++) {
    const mjWarningStat* w = warning + (size_t)i * mjNWARNING;
    invalid[i] = w[mjWARN_BADQPOS].number || w[mjWARN_BADQVEL].number || w[mjWARN_BADQACC].number;
  }
  for (int i = 0; i < kNumStateOut; i++) {
    auto out = rets.get<ffi::AnyBuffer>(i);
    if (out.has_error()) return out.error();
    if (ffi::Error err = Write(e->state[i], n, e->state_size[i], e->nstate, invalid, true, *out,
                               "state");
        err.failure())
      return err;
  }
  for (size_t k = 0; k < e->outputs.size(); k++) {
    const Output& o = e->outputs[k];
    auto out = rets.get<ffi::AnyBuffer>(kNumStateOut + k);
    if (out.has_error()) return out.error();
    const bool nan_invalid = o.name == "sensordata";
    if (ffi::Error err =
            Write(o.storage.data(), n, o.size, o.size, invalid, nan_invalid, *out, o.name);
        err.failure())
      return err;
  }
  return ffi::Error::Success();
}

std::vector<std::string> Split(const char* list) {
  std::vector<std::string> names;
  std::stringstream stream(list ? list : "");
  for (std::string name; std::getline(stream, name, ',');)
    if (!name.empty()) names.push_back(name);
  return names;
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(jaxcontrol_mujoco_step, Step,
                              ffi::Ffi::Bind()
                                  .Attr<int64_t>("engine")
                                  .RemainingArgs()
                                  .RemainingRets());

extern "C" {

// A new engine for `model` (kept alive by the caller). `fields`: comma-separated
// "name:type" of the per-environment model fields (type d, f, i or B), in operand order;
// `outputs`: comma-separated mjData fields, in result order; `lean`: end with LeanStage
// where it applies. NULL on failure, with the reason in `error`.
void* jaxcontrol_engine_new(const mjModel* model, int n_sub_steps, int substep_sensors,
                            int nthread, const char* fields, const char* outputs, int lean,
                            char* error, int error_size) {
  Engine* e = new Engine();
  e->model = model;
  e->n_sub_steps = n_sub_steps;
  e->substep_sensors = substep_sensors;
  e->nthread = nthread;
  e->flags = model->opt.disableflags;
  for (const std::string& item : Split(fields)) {
    const size_t colon = item.rfind(':');
    Field f;
    f.name = item.substr(0, colon);
    f.type = colon == std::string::npos ? 'd' : item[colon + 1];
    e->fields.push_back(f);
  }
  const std::vector<std::string> names = Split(outputs);
  for (const std::string& name : names) e->outputs.push_back(Output{name});
  e->lean = lean && LeanApplies(model, names);
  std::string reserved = e->Reserve(1);  // checks every name now
  if (!reserved.empty()) {
    std::snprintf(error, error_size, "%s", reserved.c_str());
    delete e;
    return nullptr;
  }
  return e;
}

void jaxcontrol_engine_free(void* engine) { delete static_cast<Engine*>(engine); }

// Whether the engine ends its step with the lean stage.
int jaxcontrol_engine_lean(void* engine) { return static_cast<Engine*>(engine)->lean; }

}  // extern "C"
