#include "xbak/backup/backup_output.h"

#include <unistd.h>

#include <chrono>
#include <vector>

#include "xbak/crypt/format.h"
#include "xbak/sink/compress.h"
#include "xbak/sink/encrypt.h"
#include "xbak/sink/fifo.h"
#include "xbak/sink/xbstream_sink.h"
#include "xbak/util/log.h"

namespace xbak::backup {

Status OpenBackupOutput(const BackupOptions& o, BackupOutput* out) {
  if (o.stream.empty()) {
    if (o.target_dir.empty()) return Error(ErrorCode::kInvalidArgument, "--target-dir is required");
    XBAK_ASSIGN_OR_RETURN(out->dest, sink::MakeDirectorySink(o.target_dir));
  } else if (o.fifo_streams > 1) {
    if (o.fifo_dir.empty()) return Error(ErrorCode::kInvalidArgument, "--fifo-streams needs --fifo-dir");
    util::LogInfo("waiting up to " + std::to_string(o.fifo_timeout_s) + " s for readers on " +
                  std::to_string(o.fifo_streams) + " fifos in " + o.fifo_dir);
    XBAK_ASSIGN_OR_RETURN(
        out->dest, sink::MakeFifoSink(o.fifo_dir, o.fifo_streams, std::chrono::seconds(o.fifo_timeout_s)));
  } else {
    // A bounded queue between the copy threads and stdout keeps memory flat
    // whatever the reader's speed.
    std::vector<int> fds{STDOUT_FILENO};
    sink::StreamBufferOptions bo;
    bo.names = {"stdout"};
    XBAK_ASSIGN_OR_RETURN(out->dest, sink::MakeBufferedXbstreamSink(fds, std::move(bo)));
  }
  // --encrypt: every file, the metadata too, as X.xbenc; nothing leaves in clear text.
  if (o.encrypt) {
    XBAK_ASSIGN_OR_RETURN(out->meta,
                          sink::MakeEncryptingSink(sink::MakeSinkRef(*out->dest), o.encrypt_options));
    util::LogInfo("encrypting every file with " +
                  std::string(crypt::AlgorithmName(o.encrypt_options.algorithm)) + ", key id " +
                  crypt::KeyIdHex(o.encrypt_options.key->id()));
  } else {
    out->meta = sink::MakeSinkRef(*out->dest);
  }
  if (o.compress) {
    XBAK_ASSIGN_OR_RETURN(out->data,
                          sink::MakeCompressingSink(sink::MakeSinkRef(*out->meta), o.compress_options));
  } else {
    out->data = sink::MakeSinkRef(*out->meta);
  }
  return Status::Ok();
}

}  // namespace xbak::backup
