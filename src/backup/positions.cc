#include "xbak/backup/positions.h"

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "xbak/backup/replica.h"
#include "xbak/util/log.h"

namespace xbak::backup {

Result<backupdir::BinlogPosition> RecordPositions(mysql::Connection& c, sink::Sink& meta,
                                                  backupdir::MetaScheme scheme,
                                                  const PositionsWanted& wanted) {
  using backupdir::Meta;
  backupdir::BinlogPosition binlog;
  // Without a binary log there is no position, and SHOW MASTER STATUS would
  // need BINLOG MONITOR all the same.
  std::vector<std::map<std::string, std::string>> master;
  if (wanted.binlog) {
    XBAK_ASSIGN_OR_RETURN(master, c.QueryNamed("SHOW MASTER STATUS"));
  }
  if (!master.empty() && !master[0]["File"].empty()) {
    binlog.file = master[0]["File"];
    binlog.position = std::strtoull(master[0]["Position"].c_str(), nullptr, 10);
    XBAK_ASSIGN_OR_RETURN(auto gtid, c.QueryValue("SELECT @@GLOBAL.gtid_current_pos"));
    binlog.gtid = gtid.value_or("");
    XBAK_RETURN_IF_ERROR(sink::WriteSmallFile(meta, backupdir::MetaName(Meta::kBinlogInfo, scheme),
                                              backupdir::FormatBinlogInfo(binlog)));
    util::LogInfo("binlog position " + binlog.file + ":" + std::to_string(binlog.position) + ", GTID " +
                  binlog.gtid);
  }
  if (wanted.slave_info) {
    XBAK_ASSIGN_OR_RETURN(std::string si, SlaveInfo(c));
    if (!si.empty())
      XBAK_RETURN_IF_ERROR(sink::WriteSmallFile(meta, backupdir::MetaName(Meta::kSlaveInfo, scheme), si));
  }
  if (wanted.galera_info) {
    XBAK_ASSIGN_OR_RETURN(std::string gi, GaleraInfo(c));
    if (!gi.empty()) {
      const std::string name = backupdir::MetaName(Meta::kGaleraInfo, scheme);
      XBAK_RETURN_IF_ERROR(sink::WriteSmallFile(meta, name, gi));
      util::LogInfo("Galera position " + gi.substr(0, gi.size() - 1) + " (" + name + ")");
    }
  }
  return binlog;
}

}  // namespace xbak::backup
