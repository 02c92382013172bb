// xbak's options as boost::program_options describes them, and its usage
// text: what --help prints. Names follow xtrabackup/mariabackup.
#pragma once

#include <boost/program_options.hpp>

namespace xbak::cli {

extern const char* const kXbakUsage;

// Every option into *all, and the ones --help shows into *visible (the
// loose- spellings of mariabackup are accepted, not shown).
void DescribeXbakOptions(boost::program_options::options_description* all,
                         boost::program_options::options_description* visible);

}  // namespace xbak::cli
