package ec2sim

import (
	"encoding/xml"
	"net/http"
	"time"
)

const ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"

// respMeta is embedded in every response body; its field is promoted, so it
// is the first child of <{Action}Response>.
type respMeta struct {
	RequestID string `xml:"requestId"`
}

func (m *respMeta) setRequestID(id string) { m.RequestID = id }

type response interface{ setRequestID(string) }

type returnResp struct {
	respMeta
	Return bool `xml:"return"`
}

func okReturn() response { return &returnResp{Return: true} }

type errorResp struct {
	XMLName   xml.Name   `xml:"Response"`
	Errors    []errorXML `xml:"Errors>Error"`
	RequestID string     `xml:"RequestID"`
}

type errorXML struct {
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

func writeXMLResponse(w http.ResponseWriter, action, requestID string, body response) {
	body.setRequestID(requestID)
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Header().Set("x-amzn-RequestId", requestID)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(xml.Header))
	start := xml.StartElement{Name: xml.Name{Local: action + "Response"},
		Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: ec2Namespace}}}
	_ = xml.NewEncoder(w).EncodeElement(body, start)
}

func writeXMLError(w http.ResponseWriter, requestID string, e *apiError) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Header().Set("x-amzn-RequestId", requestID)
	w.WriteHeader(httpStatus(e.Code))
	_, _ = w.Write([]byte(xml.Header))
	body := errorResp{Errors: []errorXML{{Code: e.Code, Message: e.Message}}, RequestID: requestID}
	_ = xml.NewEncoder(w).Encode(body)
}

func ec2Time(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// Shapes shared by several responses.

type tagXML struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

type groupXML struct {
	GroupID   string `xml:"groupId"`
	GroupName string `xml:"groupName"`
}

type privateIPXML struct {
	PrivateIPAddress string `xml:"privateIpAddress"`
	PrivateDNSName   string `xml:"privateDnsName,omitempty"`
	Primary          *bool  `xml:"primary,omitempty"`
}

type prefixXML struct {
	Ipv4Prefix string `xml:"ipv4Prefix"`
}

// niXML serves both NetworkInterface (Describe/CreateNetworkInterface) and
// InstanceNetworkInterface (DescribeInstances); the SDK skips unknown elements.
type niXML struct {
	NetworkInterfaceID string          `xml:"networkInterfaceId"`
	SubnetID           string          `xml:"subnetId"`
	VpcID              string          `xml:"vpcId"`
	AvailabilityZone   string          `xml:"availabilityZone"`
	Description        string          `xml:"description"`
	OwnerID            string          `xml:"ownerId"`
	RequesterManaged   bool            `xml:"requesterManaged"`
	Status             string          `xml:"status"`
	MacAddress         string          `xml:"macAddress"`
	PrivateIPAddress   string          `xml:"privateIpAddress,omitempty"`
	PrivateDNSName     string          `xml:"privateDnsName,omitempty"`
	SourceDestCheck    bool            `xml:"sourceDestCheck"`
	Groups             []groupXML      `xml:"groupSet>item"`
	Attachment         *niAttachXML    `xml:"attachment,omitempty"`
	Tags               []tagXML        `xml:"tagSet>item"`
	PrivateIPs         []privateIPXML  `xml:"privateIpAddressesSet>item"`
	Prefixes           []prefixXML     `xml:"ipv4PrefixSet>item"`
	Ipv6Addresses      []ipv6AddrXML   `xml:"ipv6AddressesSet>item"`
	Ipv6Prefixes       []ipv6PrefixXML `xml:"ipv6PrefixSet>item"`
	InterfaceType      string          `xml:"interfaceType"`
}

type niAttachXML struct {
	AttachmentID        string `xml:"attachmentId"`
	InstanceID          string `xml:"instanceId"`
	InstanceOwnerID     string `xml:"instanceOwnerId"`
	DeviceIndex         int    `xml:"deviceIndex"`
	NetworkCardIndex    int    `xml:"networkCardIndex"`
	Status              string `xml:"status"`
	AttachTime          string `xml:"attachTime"`
	DeleteOnTermination bool   `xml:"deleteOnTermination"`
}
