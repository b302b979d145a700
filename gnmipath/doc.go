// Package gnmipath is the gNMI codec: the one definition of every gNMI path
// and value encoding ecntune uses, for both dialects. The agent decodes
// telemetry into env.Snapshots (NewDecoder, Apply, Snapshot) and builds
// Sets (SetRequest); simswitch encodes Snapshots (NewEncoder, Encode,
// Notifications) and applies Sets (ApplySet). It is pure: no network, no
// clock, and nothing of the simulator.
//
// A client never asks for a whole profile table (any client can fill one):
// Subscriptions covers the counters and the queue (and PG) bindings, and
// the profiles the bindings name are subscribed to by name
// (Decoder.Profiles, BindingsVersion, ProfileSubscribeRequest); a read-back
// gets the bindings (SettingPaths), then the profiles they name
// (Decoder.ProfilesOf, ProfileSubscription).
//
// # openconfig
//
// ECN (openconfig-qos): a profile per queue-management-profile,
//
//	/qos/queue-management-profiles/queue-management-profile[name=P]/wred/uniform/config/
//	    min-threshold, max-threshold          uint64 bytes (JSON_IETF: strings)
//	    max-drop-probability-percent          uint8 percent, 1..100 (Pmax = percent/100)
//	    enable-ecn                            bool
//
// (with the list key leaf .../queue-management-profile[name=P]/config/name,
// which a Set creating a profile also writes),
//
// bound to a queue by
//
//	/qos/interfaces/interface[interface-id=X]/output/queues/queue[name=N]/config/queue-management-profile
//
// Queue counters (cumulative) and lengths (bytes):
//
//	/qos/interfaces/interface[interface-id=X]/output/queues/queue[name=N]/state/
//	    transmit-pkts transmit-octets dropped-pkts dropped-octets ecn-marked-pkts ecn-marked-octets
//	    max-queue-len avg-queue-len           (openconfig-qos)
//	    current-queue-len                     (ecntune extension, optional)
//
// max-queue-len and avg-queue-len cover the time since the previous read
// (read-and-clear, as the simulator exports them).
//
// OpenConfig has no PFC model. ecntune follows Arista's EOS augment of
// openconfig-if-ethernet, /interfaces/interface[name=X]/ethernet/pfc/
// priorities/priority[index=N]/state/{in-frames,out-frames} (as Arista
// documents it for EOS switches; frames received and sent for
// that priority). The other leaves under the same priority entry are
// ecntune's own extension, documented here and nowhere else, because no
// public model checked for this project carries them: state/paused-duration
// (cumulative ns this port's egress was held paused), state/xoff-threshold,
// state/min-headroom, state/headroom (bytes) and the settable
// config/headroom (bytes of PFC headroom of that ingress PG). Port speed is
// openconfig-if-ethernet's /interfaces/interface[name=X]/ethernet/state/
// port-speed (identity SPEED_100GB etc.; non-whole Gb/s rates are written
// SPEED_<n>MB). The switch's shared buffer size is the extension leaf
// /qos/state/shared-buffer-size.
//
// # sonic
//
// Two devices speak SONiC's database layout (see PROFILES.md).
//
// Device sonic is SONiC as sonic-gnmi serves it (sonic_data_client:
// virtual_db.go, db_client.go): prefix.target is the database, with the
// namespace after a "/" on a multi-ASIC switch ("COUNTERS_DB/asic0"), and
// every value a string. COUNTERS_DB is keyed by SAI object id, so counters
// are read through its virtual paths, each answered as one update whose
// value is a JSON object keyed by table key:
//
//	COUNTERS/Ethernet*/Queues   "<alias>:<q>": SAI_QUEUE_STAT_{PACKETS,BYTES,DROPPED_PACKETS,DROPPED_BYTES,
//	                                           WRED_ECN_MARKED_PACKETS,WRED_ECN_MARKED_BYTES,CURR_OCCUPANCY_BYTES}
//	                            "<alias>:<q>:periodic": SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES (PERIODIC_WATERMARKS)
//	COUNTERS/Ethernet*          "<alias>": SAI_PORT_STAT_PFC_<n>_{RX,TX}_PKTS, SAI_PORT_STAT_PFC_<n>_RX_PAUSE_DURATION_US
//
// With a wildcard port the keys are the ports' aliases (CONFIG_DB PORT|*
// alias), which the decoder maps back to names. The minimum sample interval
// is 1 s. CONFIG_DB is written with origin sonic-db at
// /CONFIG_DB/localhost/TABLE/KEY/FIELD, one update per field (the config
// updater applies a Set as a JSON patch; writing a whole entry replaces it
// and drops the fields not given), an entry created with every field (a
// BUFFER_PROFILE with its mandatory pool). Under the dynamic buffer model
// BUFFER_PG binds "NULL" (buffermgrd computes the lossless profile): headroom
// is not tunable there (HeadroomError), ECN is. A lossless PG's alpha
// (env.Setting.Alpha) is 2^dynamic_th of the same buffer profile (unknown, 0,
// when the field is absent); a changed alpha is written as dynamic_th = log2
// alpha beside the headroom, and must be a power of two in 2^-8..2^8. The
// openconfig-family devices have no alpha.
//
//	CONFIG_DB   WRED_PROFILE|<p>    green_min_threshold green_max_threshold green_drop_probability (percent)
//	                                wred_green_enable ecn
//	            QUEUE|<port>|<q>    wred_profile ("name" or "[WRED_PROFILE|name]")
//	            BUFFER_PROFILE|<p>  size xon xoff dynamic_th pool      (headroom = xoff; size = xon + xoff; alpha = 2^dynamic_th)
//	            BUFFER_PG|<port>|<pgs>  profile                        (pgs "3" or "3-4"; "NULL": dynamic model)
//	            PORT|<port>         speed (Mb/s), alias, mtu
//	            BUFFER_POOL|ingress_lossless_pool  size                (buffer bytes)
//	            CABLE_LENGTH|AZURE  <port> ("40m")                     (the length the headroom was sized for)
//
// sonic-gnmi serves no lossless floor. Where a PG shows a headroom and its
// port a CABLE_LENGTH, the decoder computes the floor (env.LosslessFloor,
// frames of the port's mtu and EthernetOverhead) and marks it estimated
// (env.QueueSample.FloorEstimated): decisions keep to it, but a vendor
// headroom below it is reported, not raised, since the vendor's buffer
// manager may size headroom by a tighter rule (cells, a smaller lossless
// MTU). LOSSLESS_TRAFFIC_PATTERN (the lossless MTU and share of small
// packets) is not read: SONiC adds it only for the dynamic buffer model,
// whose buffer manager computes each PG's headroom itself (a vendor plugin,
// also fed by STATE_DB's ASIC_TABLE) and where headroom is not tunable.
//
// Device ecntune-sonic is ecntune's idealised switch in that layout, as
// simswitch --dialect sonic serves it: COUNTERS|<port>:<q> (not object ids)
// with SAI_QUEUE_STAT_WATERMARK_BYTES and an ECNTUNE_QUEUE_AVG_OCCUPANCY_BYTES
// extension, COUNTERS|<port> for PFC, and the namespace as the element after
// the database (simswitch uses it to pick a switch). The decoder reads both.
//
// # LLDP
//
// The openconfig-lldp neighbour state (system-name, port-id, chassis-id and
// capability enabled flags of each interface's neighbours) is read-only
// and kept apart from the QoS leaves: LLDPItems encodes it for simswitch,
// LLDPNeighbors reads it back whatever the server's shape, and the Decoder
// ignores it. See lldp.go.
//
// # Values and PFC frames
//
// PFC frame counters carry XOFF (pause) frames only, as simenv/export does,
// so that a policy sees the same numbers from the simulator in process and
// over gNMI. Pmax is carried as a whole percent in both dialects: use
// Quantize to compare a read-back with what was asked.
//
// # Timestamps
//
// simswitch stamps notifications with Epoch + simulated nanoseconds (see
// SimTimestamp), not the wall clock: counters advance at simulated speed,
// so rates computed from timestamp deltas are right whatever the timescale.
package gnmipath
