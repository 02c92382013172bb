#!/usr/bin/env bash
# Issue 24, done-when 3: t_pitr.sh with binlog_format=MIXED (the ledger, sysbench, DDL and a
# transaction over max_binlog_size replayed as MIXED events).
PITR_WRITE_SECS=${PITR_WRITE_SECS:-15} PITR_BINLOG_FORMAT=MIXED XBAK_TEST_NAME=t_pitr_mixed exec bash "$(dirname "${BASH_SOURCE[0]}")/t_pitr.sh"
