package org.apache.flink.runtime.scheduler;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.util.TimeUtils;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

/**
 * Which TaskManagers are alive now, as this JobManager's own REST endpoint ({@code GET /taskmanagers}) says: a
 * TaskManager is lost when it is not listed, or when its last heartbeat ({@code timeSinceLastHeartbeat}, an epoch-ms
 * timestamp despite its name) is older than two {@code heartbeat.interval}s plus a second. The staleness bound matters:
 * after a SIGKILL the job's tasks fail at once and Flink restarts long before its heartbeat timeout unregisters the
 * TaskManager. The answer is cached for a second (all slot requests of one restart see the same set); when the call
 * fails, a WARN is logged (once until it works again) and every TaskManager counts as alive.
 */
final class PlacementLiveness {
    private static final Logger LOG = LoggerFactory.getLogger(SlotSharingExecutionSlotAllocatorFactory.class);
    private static final int TIMEOUT_MS = 2000;
    private static final long CACHE_MS = 1000;
    private static final long DEFAULT_HEARTBEAT_INTERVAL_MS = 10_000;

    private static Map<String, Long> heartbeatOf; // resource id -> last heartbeat (epoch ms); null: unknown
    private static long askedAt = Long.MIN_VALUE;
    private static boolean warned;

    private PlacementLiveness() {}

    /** The TaskManagers among {@code taskManagers} that are lost now (none when liveness cannot be told). */
    static synchronized Set<String> lostAmong(Collection<String> taskManagers) {
        long now = System.currentTimeMillis();
        if (askedAt == Long.MIN_VALUE || now - askedAt > CACHE_MS || now < askedAt) {
            heartbeatOf = ask();
            askedAt = System.currentTimeMillis();
        }
        Set<String> lost = new LinkedHashSet<>();
        if (heartbeatOf == null) {
            return lost;
        }
        long bound = 2 * heartbeatIntervalMs() + 1000;
        for (String tm : taskManagers) {
            Long last = heartbeatOf.get(tm);
            if (last == null || (last > 0 && now - last > bound)) {
                lost.add(tm);
            }
        }
        return lost;
    }

    private static Map<String, Long> ask() {
        String url = restUrl() + "/taskmanagers";
        try {
            HttpURLConnection http = (HttpURLConnection) new URL(url).openConnection();
            http.setConnectTimeout(TIMEOUT_MS);
            http.setReadTimeout(TIMEOUT_MS);
            http.setRequestProperty("Accept", "application/json");
            JsonNode body;
            try (InputStream in = http.getInputStream()) {
                if (http.getResponseCode() != 200) {
                    throw new IllegalStateException("HTTP " + http.getResponseCode());
                }
                body = new ObjectMapper().readTree(in);
            } finally {
                http.disconnect();
            }
            JsonNode list = body.get("taskmanagers");
            if (list == null || !list.isArray()) {
                throw new IllegalStateException("no 'taskmanagers' list in the answer");
            }
            Map<String, Long> out = new HashMap<>();
            for (JsonNode tm : list) {
                JsonNode id = tm.get("id");
                JsonNode heartbeat = tm.get("timeSinceLastHeartbeat");
                if (id != null && id.isTextual()) {
                    out.put(id.asText(), heartbeat != null && heartbeat.canConvertToLong() ? heartbeat.asLong() : 0L);
                }
            }
            if (warned) {
                LOG.info("placement: {} answers again: contingency placements follow the TaskManagers' liveness", url);
            }
            warned = false;
            return out;
        } catch (Exception e) {
            if (!warned) {
                LOG.warn("placement: cannot tell which TaskManagers are alive ({}: {}): every TaskManager counts as"
                        + " alive, so contingency sections are not applied until it answers", url, e.toString());
                warned = true;
            }
            return null;
        }
    }

    /** This JobManager's REST endpoint, from its configuration (rest.bind-address / rest.address, rest.port). */
    static String restUrl() {
        Map<String, String> conf = PlacementSchedulerSettings.clusterConfiguration().toMap();
        String host = conf.get("rest.bind-address");
        if (host == null || host.trim().isEmpty() || host.trim().equals("0.0.0.0") || host.trim().equals("::")) {
            host = conf.get("rest.address");
        }
        if (host == null || host.trim().isEmpty()) {
            host = "localhost";
        }
        host = host.trim();
        String port = conf.get("rest.bind-port");
        if (port == null || !port.trim().matches("\\d+")) {
            port = conf.getOrDefault("rest.port", "8081");
        }
        return "http://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port.trim();
    }

    /** heartbeat.interval in ms (1.19 reads it as a number, later lines as a duration; both forms accepted). */
    static long heartbeatIntervalMs() {
        Configuration config = PlacementSchedulerSettings.clusterConfiguration();
        String value = config.toMap().get("heartbeat.interval");
        if (value == null || value.trim().isEmpty()) {
            return DEFAULT_HEARTBEAT_INTERVAL_MS;
        }
        try {
            Duration d = TimeUtils.parseDuration(value.trim());
            return d.toMillis();
        } catch (RuntimeException e) {
            return DEFAULT_HEARTBEAT_INTERVAL_MS;
        }
    }
}
