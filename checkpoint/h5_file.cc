#include "checkpoint/h5_file.h"

#include <hdf5/serial/hdf5.h>

#include <limits>

#include "absl/strings/str_cat.h"

namespace ringwork {
namespace {

// Closes an HDF5 handle when it leaves scope.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// libhdf5 prints its error stack to stderr by default; errors come back as statuses.
void QuietErrors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

// A file in memory (the core driver, nothing on disk), under a name no file can
// have: libhdf5 refuses an image whose name exists on disk.
constexpr char kImageName[] = "/nonexistent-ringwork-dir/in-memory.h5";

hid_t MemoryAccess() {
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl >= 0) H5Pset_fapl_core(fapl, 1 << 20, /*backing_store=*/0);
  return fapl;
}

absl::Status WriteDataset(hid_t file, hid_t lcpl, const NamedTensor& t) {
  std::vector<hsize_t> dims(t.shape.begin(), t.shape.end());
  Handle space(t.shape.empty()
                   ? H5Screate(H5S_SCALAR)
                   : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
               H5Sclose);
  Handle data(space.ok() ? H5Dcreate2(file, t.name.c_str(), H5T_IEEE_F32LE, space.get(), lcpl,
                                      H5P_DEFAULT, H5P_DEFAULT)
                         : -1,
              H5Dclose);
  if (!data.ok() ||
      H5Dwrite(data.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.values.data()) < 0) {
    return absl::InvalidArgumentError(absl::StrCat("HDF5: cannot write dataset ", t.name));
  }
  return absl::OkStatus();
}

struct Visit {
  std::string where;
  std::vector<std::string> datasets;
};

herr_t CollectDataset(hid_t group, const char* name, const H5L_info_t* info, void* data) {
  if (info->type != H5L_TYPE_HARD) return 0;  // Links elsewhere hold nothing of this file's.
  Handle object(H5Oopen(group, name, H5P_DEFAULT), H5Oclose);
  if (object.ok() && H5Iget_type(object.get()) == H5I_DATASET) {
    static_cast<Visit*>(data)->datasets.push_back(name);
  }
  return 0;
}

// `budget`: the bytes the file may still hold; uncompressed data cannot exceed
// the file, whatever its chunks claim.
absl::Status ReadDataset(hid_t file, const std::string& where, NamedTensor* t, uint64_t* budget) {
  const std::string at = absl::StrCat(where, ", dataset ", t->name);
  Handle data(H5Dopen2(file, t->name.c_str(), H5P_DEFAULT), H5Dclose);
  Handle type(data.ok() ? H5Dget_type(data.get()) : -1, H5Tclose);
  Handle space(data.ok() ? H5Dget_space(data.get()) : -1, H5Sclose);
  if (!type.ok() || !space.ok()) return absl::DataLossError(at + ": cannot be read");
  if (H5Tget_class(type.get()) != H5T_FLOAT) {
    return absl::DataLossError(at + ": not floating point");
  }
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0 || rank > 8) return absl::DataLossError(absl::StrCat(at, ": rank ", rank));
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  uint64_t elements = 1;
  for (hsize_t d : dims) {
    if (d != 0 && elements > std::numeric_limits<uint32_t>::max() / d) {
      return absl::DataLossError(at + ": a shape too large");
    }
    elements *= d;
    t->shape.push_back(static_cast<int64_t>(d));
  }
  // What the file stores must cover the shape: a few bytes cannot claim gigabytes.
  const uint64_t bytes = elements * H5Tget_size(type.get());
  if (H5Dget_storage_size(data.get()) < bytes || bytes > *budget) {
    return absl::DataLossError(at + ": its data is not stored whole (compressed or damaged)");
  }
  *budget -= bytes;
  t->values.resize(elements);
  if (elements > 0 &&
      H5Dread(data.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t->values.data()) < 0) {
    return absl::DataLossError(at + ": cannot be read");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> H5FileImage(const std::vector<std::string>& groups,
                                        const std::vector<NamedTensor>& datasets) {
  QuietErrors();
  Handle fapl(MemoryAccess(), H5Pclose);
  Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  if (!fapl.ok() || !lcpl.ok() || H5Pset_create_intermediate_group(lcpl.get(), 1) < 0) {
    return absl::InternalError("HDF5: cannot set up a file in memory");
  }
  Handle file(H5Fcreate(kImageName, H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
  if (!file.ok()) return absl::InternalError("HDF5: cannot make a file in memory");
  for (const std::string& g : groups) {
    if (H5Lexists(file.get(), g.c_str(), H5P_DEFAULT) > 0) continue;
    Handle group(H5Gcreate2(file.get(), g.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    if (!group.ok()) return absl::InvalidArgumentError("HDF5: cannot make group " + g);
  }
  for (const NamedTensor& t : datasets) {
    int64_t elements = 1;
    for (int64_t d : t.shape) elements *= d;
    if (static_cast<int64_t>(t.values.size()) != elements) {
      return absl::InvalidArgumentError(t.name + ": values do not fill its shape");
    }
    if (absl::Status s = WriteDataset(file.get(), lcpl.get(), t); !s.ok()) return s;
  }
  if (H5Fflush(file.get(), H5F_SCOPE_GLOBAL) < 0) {
    return absl::InternalError("HDF5: cannot flush the file");
  }
  const ssize_t size = H5Fget_file_image(file.get(), nullptr, 0);
  std::string image(size > 0 ? static_cast<size_t>(size) : 0, '\0');
  if (size <= 0 || H5Fget_file_image(file.get(), image.data(), image.size()) != size) {
    return absl::InternalError("HDF5: cannot take the file's image");
  }
  return image;
}

absl::StatusOr<std::vector<NamedTensor>> ReadH5Datasets(const std::string& image,
                                                        const std::string& where) {
  QuietErrors();
  if (image.size() < 8 || image.compare(0, 8, "\x89HDF\r\n\x1a\n") != 0) {
    return absl::DataLossError(where + ": not an HDF5 file");
  }
  Handle fapl(MemoryAccess(), H5Pclose);
  if (!fapl.ok() ||
      H5Pset_file_image(fapl.get(), const_cast<char*>(image.data()), image.size()) < 0) {
    return absl::InternalError("HDF5: cannot set up a file in memory");
  }
  Handle file(H5Fopen(kImageName, H5F_ACC_RDONLY, fapl.get()), H5Fclose);
  if (!file.ok()) return absl::DataLossError(where + ": not a readable HDF5 file");
  Visit visit{where, {}};
  if (H5Lvisit(file.get(), H5_INDEX_NAME, H5_ITER_INC, CollectDataset, &visit) < 0) {
    return absl::DataLossError(where + ": its groups cannot be read");
  }
  std::vector<NamedTensor> out(visit.datasets.size());
  uint64_t budget = image.size();
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].name = visit.datasets[i];
    try {
      if (absl::Status s = ReadDataset(file.get(), where, &out[i], &budget); !s.ok()) return s;
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError(
          absl::StrCat(where, ", dataset ", out[i].name, ": too large for this machine's memory"));
    }
  }
  return out;
}

}  // namespace ringwork
