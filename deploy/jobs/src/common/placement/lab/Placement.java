package placement.lab;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.apache.flink.api.common.operators.SlotSharingGroup;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;

/**
 * Vanilla-Flink placement of a lab job: which host runs each subtask of each vertex.
 *
 * <p>The mapping comes from {@code --placement '<json>'} (or {@code --placement-file <path>}): an object from vertex
 * name as Flink shows it ({@code "Source: Sensors"}, {@code "Parse"}, {@code "Sink: Readings"}) to a list with the host
 * of each subtask, as in a plan's assignment. With a mapping, every vertex of the job must be listed and its parallelism
 * is the list's length; without one the job runs unpinned with the parallelism from its other arguments.
 *
 * <p>Each host is a {@link SlotSharingGroup} named after the host that requests one unit of the external resource of the
 * same name. Only the TaskManager whose config declares {@code external-resources: [host]} has it, so the scheduler
 * can put those slots nowhere else.
 *
 * <p>Vanilla Flink pins a whole operator to one group. Where a plan spreads the subtasks of a FORWARD chain that starts
 * at a source over several hosts, {@link #lanes} splits that chain into lanes: subtasks whose hosts are the same at
 * every stage of the chain form one lane, and the job builds one copy of the chain per lane (parallelism = lane size,
 * each stage in its host's group, uid {@code <uid>-<host>}, or {@code <uid>-<host 1>~<host 2>~...} with one host per
 * stage when the lane changes host along the chain). The copies keep the vertex's name, so the actual
 * placement per (vertex name, host) is the sum over all vertices of that name; lanes are unioned before the first
 * all-to-all (HASH) edge. Operators after that edge must be on a single host.
 */
public final class Placement {
    private final Map<String, List<String>> hosts; // null when unpinned
    private final Set<String> used = new LinkedHashSet<>();
    private final double slotCpu;
    private final int slotHeapMb;

    private Placement(Map<String, List<String>> hosts, double slotCpu, int slotHeapMb) {
        this.hosts = hosts;
        this.slotCpu = slotCpu;
        this.slotHeapMb = slotHeapMb;
    }

    public static Placement fromArgs(Params params) throws IOException {
        String json = params.get("placement");
        if (params.has("placement-file")) {
            json = new String(Files.readAllBytes(Paths.get(params.get("placement-file"))), StandardCharsets.UTF_8);
        }
        double cpu = params.getDouble("slot-cpu", 0.25);
        int heap = params.getInt("slot-heap-mb", 16);
        if (json == null || json.trim().isEmpty()) {
            return new Placement(null, cpu, heap);
        }
        return new Placement(parse(json), cpu, heap);
    }

    static Map<String, List<String>> parse(String json) throws IOException {
        JsonNode root;
        try {
            root = new ObjectMapper().readTree(json);
        } catch (IOException e) {
            throw new IllegalArgumentException("placement: not valid JSON: " + e.getMessage().split("\n")[0]);
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("placement: expected a JSON object {vertex name: [host of each subtask]}");
        }
        Map<String, List<String>> out = new LinkedHashMap<>();
        // fields(), not properties(): Flink 1.x's shaded Jackson has only the former
        for (Map.Entry<String, JsonNode> e : (Iterable<Map.Entry<String, JsonNode>>) root::fields) {
            List<String> list = new ArrayList<>();
            if (e.getValue().isTextual()) {
                list.add(e.getValue().asText());
            } else if (e.getValue().isArray() && e.getValue().size() > 0) {
                for (JsonNode h : e.getValue()) {
                    if (!h.isTextual() || h.asText().isEmpty()) {
                        throw new IllegalArgumentException("placement: " + e.getKey() + ": hosts must be non-empty strings");
                    }
                    list.add(h.asText());
                }
            } else {
                throw new IllegalArgumentException("placement: " + e.getKey() + ": expected a host or a list of hosts");
            }
            out.put(e.getKey(), list);
        }
        return out;
    }

    public boolean pinned() {
        return hosts != null;
    }

    /** The parallelism of a vertex: the mapping's length when pinned, else {@code fallback}. */
    public int parallelism(String vertex, int fallback) {
        return pinned() ? hostsOf(vertex).size() : fallback;
    }

    public List<String> hostsOf(String vertex) {
        used.add(vertex);
        List<String> list = hosts.get(vertex);
        if (list == null) {
            throw new IllegalArgumentException(
                    "placement: no hosts for vertex '" + vertex + "' (mapping has " + new TreeSet<>(hosts.keySet()) + ")");
        }
        return list;
    }

    public SlotSharingGroup group(String host) {
        return SlotSharingGroup.newBuilder(host)
                .setCpuCores(slotCpu)
                .setTaskHeapMemoryMB(slotHeapMb)
                .setExternalResource(host, 1.0)
                .build();
    }

    /** Put a whole operator on the one host the mapping gives it (all its subtasks on that host). */
    public <T> SingleOutputStreamOperator<T> pin(SingleOutputStreamOperator<T> op, String vertex, int fallbackParallelism) {
        op.setParallelism(parallelism(vertex, fallbackParallelism));
        if (pinned()) {
            op.slotSharingGroup(group(singleHost(vertex)));
        }
        return op;
    }

    public <T> DataStreamSink<T> pin(DataStreamSink<T> sink, String vertex, int fallbackParallelism) {
        sink.setParallelism(parallelism(vertex, fallbackParallelism));
        if (pinned()) {
            sink.slotSharingGroup(group(singleHost(vertex)));
        }
        return sink;
    }

    private String singleHost(String vertex) {
        Set<String> distinct = new TreeSet<>(hostsOf(vertex));
        if (distinct.size() != 1) {
            throw new IllegalArgumentException("placement: vanilla Flink cannot split '" + vertex
                    + "' (after an all-to-all edge) over hosts " + distinct + "; give it one host");
        }
        return distinct.iterator().next();
    }

    /**
     * The lanes of a FORWARD chain {@code vertices[0] -> vertices[1] -> ...} (first one a source): one lane per
     * distinct tuple of hosts its subtasks have along the chain. Unpinned: a single lane of {@code fallbackParallelism}.
     */
    public List<Lane> lanes(int fallbackParallelism, String... vertices) {
        if (!pinned()) {
            return Collections.singletonList(new Lane(0, null, fallbackParallelism, ""));
        }
        int p = hostsOf(vertices[0]).size();
        for (String v : vertices) {
            if (hostsOf(v).size() != p) {
                throw new IllegalArgumentException("placement: '" + v + "' has " + hostsOf(v).size()
                        + " subtasks but '" + vertices[0] + "' has " + p + "; a FORWARD chain needs equal parallelism");
            }
        }
        Map<List<String>, Integer> counts = new LinkedHashMap<>();
        for (int i = 0; i < p; i++) {
            List<String> tuple = new ArrayList<>();
            for (String v : vertices) {
                tuple.add(hostsOf(v).get(i));
            }
            counts.merge(tuple, 1, Integer::sum);
        }
        List<Lane> lanes = new ArrayList<>();
        for (Map.Entry<List<String>, Integer> e : counts.entrySet()) {
            // "-rpi1" when the whole lane is on one host, else every stage's host: "-rpi1~rpi1~server~server"
            Set<String> distinct = new LinkedHashSet<>(e.getKey());
            String tag = "-" + String.join("~", distinct.size() == 1 ? distinct : e.getKey());
            lanes.add(new Lane(lanes.size(), e.getKey(), e.getValue(), tag));
        }
        return lanes;
    }

    /** Fail on mapping keys that name no vertex of the job (typos would otherwise be ignored silently). */
    public void checkAllUsed() {
        if (!pinned()) {
            return;
        }
        Set<String> unknown = new TreeSet<>(hosts.keySet());
        unknown.removeAll(used);
        if (!unknown.isEmpty()) {
            throw new IllegalArgumentException("placement: unknown vertex name(s) " + unknown + " (this job has " + used + ")");
        }
    }

    /** One copy of a FORWARD chain: its stages' hosts (null when unpinned), its parallelism and its uid suffix. */
    public final class Lane {
        public final int ordinal;
        public final List<String> hosts;
        public final int parallelism;
        public final String uidSuffix;

        Lane(int ordinal, List<String> hosts, int parallelism, String uidSuffix) {
            this.ordinal = ordinal;
            this.hosts = hosts;
            this.parallelism = parallelism;
            this.uidSuffix = uidSuffix;
        }

        /** Set parallelism, uid ({@code uid + suffix}) and, when pinned, the group of stage {@code stage}'s host. */
        public <T> SingleOutputStreamOperator<T> place(SingleOutputStreamOperator<T> op, int stage, String uid) {
            op.setParallelism(parallelism).uid(uid + uidSuffix);
            if (hosts != null) {
                op.slotSharingGroup(group(hosts.get(stage)));
            }
            return op;
        }
    }
}
